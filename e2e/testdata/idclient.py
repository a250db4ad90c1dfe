"""A JSON-RPC client of `harness mcp` that writes one message and reads its
answer before the next, as a fault-finding client once did: a request
with id null hung the session for good. Prints one line per answer, the
raw line; exits 1 if an answer does not come within 10 s."""
import os, select, subprocess, sys

harness, socket = sys.argv[1], sys.argv[2]
p = subprocess.Popen([harness, "mcp", "--socket", socket], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
buf = b""

def ask(line):
    global buf
    p.stdin.write(line.encode() + b"\n")
    p.stdin.flush()
    while b"\n" not in buf:
        r, _, _ = select.select([p.stdout], [], [], 10)
        if not r:
            print("NO ANSWER to " + line, flush=True)
            p.kill()
            sys.exit(1)
        chunk = os.read(p.stdout.fileno(), 65536)
        if not chunk:
            print("EOF after " + line, flush=True)
            sys.exit(1)
        buf += chunk
    answer, buf = buf.split(b"\n", 1)
    print(answer.decode(), flush=True)

ask('{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"py","version":"1"}}}')
p.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
for line in sys.argv[3:]:
    ask(line)
p.stdin.close()
p.wait(timeout=10)
