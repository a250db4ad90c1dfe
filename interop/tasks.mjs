// tasks.mjs drives MCP tasks (2025-11-25) with the TypeScript SDK's
// experimental tasks client on behalf of the Go interop tests, as
// client.mjs drives plain calls. The plan (argv[2]) is a list of steps;
// each prints one JSON line {"i", "op", "ok", "result" | "error"}.
//
//   {"steps": [
//     {"op": "connect", "conn": "h", "transport": {"type": "http", "url": "...", "headers": {...}}
//                     | {"type": "stdio", "command": "...", "args": [...]},
//      "choice": "Yes"},          // answer every elicitation with this choice (absent: decline)
//     {"op": "call", "conn": "h", "name": "...", "args": {...}},   // a plain, blocking tools/call
//     {"op": "task", "conn": "h", "name": "...", "args": {...}, "ttl": 60000},
//                                 // callToolStream to its end: {taskId, statuses, result | error, asked}
//     {"op": "start", "conn": "h", "name": "...", "args": {...}, "ttl": 60000},   // {taskId}
//     {"op": "waitStatus", "conn": "h", "task": STEP, "status": "input_required", "timeoutMs": 60000},
//     {"op": "get" | "cancel" | "result", "conn": "h", "task": STEP},  // STEP: the index of the step that made it
//     {"op": "list", "conn": "h"}
//   ]}
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema, ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

function emit(obj) {
  process.stdout.write(JSON.stringify(obj) + "\n");
}

function transportOf(spec) {
  if (spec.type === "http") {
    return new StreamableHTTPClientTransport(new URL(spec.url), { requestInit: { headers: spec.headers ?? {} } });
  }
  return new StdioClientTransport({
    command: spec.command,
    args: spec.args ?? [],
    env: { ...process.env, ...(spec.env ?? {}) },
    stderr: "inherit",
  });
}

const conns = {};
const asked = {};
const taskIds = {};

async function run(step, i) {
  const conn = step.conn ?? "default";
  const c = conns[conn];
  const taskId = () => taskIds[step.task];
  switch (step.op) {
    case "connect": {
      const client = new Client(
        { name: "harness-interop-tasks", version: "0" },
        { capabilities: { elicitation: {}, tasks: { list: {}, cancel: {}, requests: { elicitation: { create: {} } } } } },
      );
      asked[conn] = [];
      client.setRequestHandler(ElicitRequestSchema, async (req) => {
        asked[conn].push({ message: req.params.message, meta: req.params._meta ?? null, schema: req.params.requestedSchema });
        if (!step.choice) return { action: "decline" };
        return { action: "accept", content: { choice: step.choice } };
      });
      await client.connect(transportOf(step.transport));
      conns[conn] = client;
      return { capabilities: client.getServerCapabilities() };
    }
    case "call":
      return await c.callTool({ name: step.name, arguments: step.args ?? {} }, undefined, { timeout: step.timeoutMs ?? 120000 });
    case "task": {
      const out = { statuses: [] };
      const stream = c.experimental.tasks.callToolStream(
        { name: step.name, arguments: step.args ?? {} },
        CallToolResultSchema,
        { task: { ttl: step.ttl ?? 60000 }, timeout: step.timeoutMs ?? 120000 },
      );
      for await (const m of stream) {
        if (m.type === "taskCreated") {
          out.taskId = m.task.taskId;
          out.statuses.push(m.task.status);
        } else if (m.type === "taskStatus") {
          if (out.statuses[out.statuses.length - 1] !== m.task.status) out.statuses.push(m.task.status);
          if (m.task.status === "input_required") out.inputMessage = m.task.statusMessage;
        } else if (m.type === "result") {
          out.result = m.result;
        } else if (m.type === "error") {
          out.error = String(m.error?.message ?? m.error);
        }
      }
      taskIds[i] = out.taskId;
      out.asked = asked[conn];
      return out;
    }
    case "start": {
      const stream = c.experimental.tasks.requestStream(
        { method: "tools/call", params: { name: step.name, arguments: step.args ?? {} } },
        CallToolResultSchema,
        { task: { ttl: step.ttl ?? 60000 } },
      );
      for await (const m of stream) {
        if (m.type === "taskCreated") {
          taskIds[i] = m.task.taskId;
          return { taskId: m.task.taskId, status: m.task.status };
        }
        if (m.type === "error") throw m.error;
      }
      throw new Error("no task was created");
    }
    case "waitStatus": {
      const deadline = Date.now() + (step.timeoutMs ?? 60000);
      const seen = [];
      for (;;) {
        const t = await c.experimental.tasks.getTask(taskId());
        if (seen[seen.length - 1] !== t.status) seen.push(t.status);
        if (t.status === step.status) return { task: t, seen };
        if (Date.now() > deadline) throw new Error(`task ${taskId()} is ${t.status} (${t.statusMessage}), not ${step.status}; seen ${seen}`);
        await new Promise((r) => setTimeout(r, t.pollInterval ?? 500));
      }
    }
    case "get":
      return await c.experimental.tasks.getTask(taskId());
    case "cancel":
      return await c.experimental.tasks.cancelTask(taskId());
    case "result":
      return await c.experimental.tasks.getTaskResult(taskId(), CallToolResultSchema);
    case "list":
      return await c.experimental.tasks.listTasks();
    default:
      throw new Error(`unknown op ${step.op}`);
  }
}

const plan = JSON.parse(process.argv[2]);
for (const [i, step] of plan.steps.entries()) {
  try {
    emit({ i, op: step.op, ok: true, result: await run(step, i) });
  } catch (e) {
    emit({ i, op: step.op, ok: false, error: String(e?.message ?? e), code: e?.code ?? null });
  }
}
for (const c of Object.values(conns)) await c.close().catch(() => {});
process.exit(0);
