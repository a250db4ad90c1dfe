// client.mjs drives MCP servers with the TypeScript SDK client on behalf of
// the Go interop tests. It is generic: the Go side describes connections
// and steps in a JSON plan, and gets one JSON line per step on stdout.
//
// Plan: argv[2] when given, otherwise the first line of stdin.
//
//   {"steps": [
//     {"op": "connect", "conn": "a", "transport": {"type": "stdio", "command": "...", "args": [...], "env": {...}, "cwd": "..."}},
//     {"op": "connect", "conn": "h", "transport": {"type": "http", "url": "...", "headers": {...}}},
//     {"op": "listTools", "conn": "a"},
//     {"op": "callTool", "conn": "a", "name": "...", "args": {...}, "progress": true, "timeoutMs": 60000},
//     {"op": "listPrompts"}, {"op": "getPrompt", "name": "...", "args": {...}},
//     {"op": "listResources"},    // {resources, templates}
//     {"op": "readResource", "uri": "..."}, {"op": "subscribe", "uri": "..."}, {"op": "unsubscribe", "uri": "..."},
//     {"op": "notifications"},    // the methods of the notifications received so far
//     {"op": "asked"},            // the server's requests answered by connect's "elicit"/"sample"
//     {"op": "waitNotification", "method": "notifications/tools/list_changed", "count": 1, "timeoutMs": 30000},
//                                 // until the connection has received count of them in all
//     {"op": "pause"},            // prints its line, then waits for one line on stdin
//     {"op": "close", "conn": "a"}
//   ]}
//
// "conn" defaults to "default"; "id" is echoed back to label a step.
// Output line: {"i", "op", "conn", "id", "ok", "result" | "error", "errorCode",
// "progress" (callTool with progress: the notifications received, in order)}.
// connect's result: {"protocolVersion", "serverInfo", "capabilities", "instructions"}.
// A failing step does not stop the plan; the exit status is non-zero only
// when the plan itself cannot be read or run.
import { createInterface } from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CreateMessageRequestSchema, ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const rl = createInterface({ input: process.stdin, terminal: false });
const lines = rl[Symbol.asyncIterator]();
async function nextLine() {
  const { value, done } = await lines.next();
  return done ? null : value;
}

function emit(obj) {
  process.stdout.write(JSON.stringify(obj) + "\n");
}

function makeTransport(spec) {
  switch (spec?.type ?? "stdio") {
    case "stdio":
      return new StdioClientTransport({
        command: spec.command,
        args: spec.args ?? [],
        // The SDK replaces the whole environment when env is set; keep ours.
        env: { ...process.env, ...(spec.env ?? {}) },
        cwd: spec.cwd,
        stderr: "inherit",
      });
    case "http":
      return new StreamableHTTPClientTransport(new URL(spec.url), {
        requestInit: { headers: spec.headers ?? {} },
      });
    default:
      throw new Error(`unknown transport type ${spec.type}`);
  }
}

const conns = new Map(); // name -> {client, transport, protocolVersion}

async function connect(step) {
  const transport = makeTransport(step.transport);
  const entry = { transport, protocolVersion: undefined };
  // The client hands the negotiated version to transports that have
  // setProtocolVersion (HTTP does, stdio does not): record it either way.
  const orig = transport.setProtocolVersion?.bind(transport);
  transport.setProtocolVersion = (v) => {
    entry.protocolVersion = v;
    orig?.(v);
  };
  const client = new Client(
    { name: step.clientName ?? "harness-interop", version: "1.0.0" },
    { capabilities: step.capabilities ?? {} },
  );
  entry.client = client;
  // Errors the SDK reports outside any request (for example a progress
  // notification for a call that has already completed) go to stderr,
  // which the Go tests print on failure.
  client.onerror = (err) => console.error(`client.mjs: conn ${step.conn ?? "default"}: onerror: ${err?.message ?? err}`);
  // Canned answers to the server's requests: "elicit" (an ElicitResult)
  // and "sample" (a CreateMessageResult), with the matching capability
  // in "capabilities". What was asked is kept for the "asked" op.
  entry.asked = [];
  if (step.elicit) {
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      entry.asked.push({ method: req.method, params: req.params });
      return step.elicit;
    });
  }
  if (step.sample) {
    client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
      entry.asked.push({ method: req.method, params: req.params });
      return step.sample;
    });
  }
  entry.notifications = [];
  entry.wake = []; // waitNotification steps waiting for the next one
  client.fallbackNotificationHandler = async (n) => {
    entry.notifications.push(n.method);
    for (const wake of entry.wake.splice(0)) wake();
  };
  await client.connect(transport, { timeout: step.timeoutMs ?? 30000 });
  conns.set(step.conn ?? "default", entry);
  return {
    protocolVersion: entry.protocolVersion,
    serverInfo: client.getServerVersion(),
    capabilities: client.getServerCapabilities(),
    instructions: client.getInstructions(),
  };
}

function conn(step) {
  const name = step.conn ?? "default";
  const c = conns.get(name);
  if (!c) throw new Error(`no connection ${name}`);
  return c;
}

async function run(step, out) {
  const opts = { timeout: step.timeoutMs ?? 60000 };
  switch (step.op) {
    case "connect":
      return connect(step);
    case "listTools": {
      const tools = [];
      let cursor;
      do {
        const r = await conn(step).client.listTools(cursor ? { cursor } : {}, opts);
        tools.push(...r.tools);
        cursor = r.nextCursor;
      } while (cursor);
      return { tools };
    }
    case "callTool": {
      if (step.progress) {
        out.progress = [];
        opts.onprogress = (p) => out.progress.push(p);
        opts.resetTimeoutOnProgress = true;
      }
      return conn(step).client.callTool({ name: step.name, arguments: step.args ?? {} }, undefined, opts);
    }
    case "listPrompts": {
      const prompts = [];
      let cursor;
      do {
        const r = await conn(step).client.listPrompts(cursor ? { cursor } : {}, opts);
        prompts.push(...r.prompts);
        cursor = r.nextCursor;
      } while (cursor);
      return { prompts };
    }
    case "getPrompt":
      return conn(step).client.getPrompt({ name: step.name, arguments: step.args ?? {} }, opts);
    case "listResources": {
      const resources = [];
      let cursor;
      do {
        const r = await conn(step).client.listResources(cursor ? { cursor } : {}, opts);
        resources.push(...r.resources);
        cursor = r.nextCursor;
      } while (cursor);
      const templates = (await conn(step).client.listResourceTemplates({}, opts)).resourceTemplates;
      return { resources, templates };
    }
    case "readResource":
      return conn(step).client.readResource({ uri: step.uri }, opts);
    case "subscribe":
      return conn(step).client.subscribeResource({ uri: step.uri }, opts);
    case "unsubscribe":
      return conn(step).client.unsubscribeResource({ uri: step.uri }, opts);
    case "notifications":
      return { methods: conn(step).notifications };
    case "asked":
      return { asked: conn(step).asked };
    case "waitNotification": {
      const c = conn(step);
      const want = step.count ?? 1;
      const ms = step.timeoutMs ?? 30000;
      const seen = () => c.notifications.filter((m) => m === step.method).length;
      let timer;
      const timeout = new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${seen()} of ${want} ${step.method} within ${ms} ms`)), ms);
      });
      try {
        while (seen() < want) await Promise.race([new Promise((wake) => c.wake.push(wake)), timeout]);
      } finally {
        clearTimeout(timer);
      }
      return { count: seen(), methods: c.notifications };
    }
    case "pause": {
      // The Go side reads this line, does its checks, then writes a line.
      emit({ ...out, ok: true, result: { paused: true } });
      const line = await nextLine();
      return { resumed: line !== null, line };
    }
    case "close": {
      const c = conn(step);
      conns.delete(step.conn ?? "default");
      await c.client.close();
      return {};
    }
    default:
      throw new Error(`unknown op ${step.op}`);
  }
}

async function main() {
  const text = process.argv[2] ?? (await nextLine());
  if (!text) throw new Error("no plan: pass it as argv[2] or the first line of stdin");
  const plan = JSON.parse(text);
  for (const [i, step] of (plan.steps ?? []).entries()) {
    const out = { i, op: step.op, conn: step.conn ?? "default" };
    if (step.id !== undefined) out.id = step.id;
    try {
      const result = await run(step, out);
      if (step.op === "pause") out.op = "resume";
      emit({ ...out, ok: true, result });
    } catch (err) {
      emit({ ...out, ok: false, error: String(err?.message ?? err), errorCode: err?.code, errorData: err?.data });
    }
  }
  for (const c of conns.values()) {
    await c.client.close().catch(() => {});
  }
  rl.close();
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error("client.mjs:", err?.stack ?? err);
    process.exit(2);
  },
);
