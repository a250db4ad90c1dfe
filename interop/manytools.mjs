// manytools.mjs is a generated stdio MCP server with 300 tools (30 kinds
// of thing x 10 actions), written with the TypeScript SDK's low-level
// Server so its schemas go out exactly as written. It stands for a fleet
// of large upstreams in the tool-search tests: names, descriptions and
// parameters read like a real SaaS API's. A call answers with its name
// and arguments.
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

// [name, what it is (with the words people use for it), fields it has]
const things = [
  ["issue", "issue (a bug report or feature request) in a code repository", ["repository", "title", "body", "labels"]],
  ["pull_request", "pull request (a proposed code change to merge into a branch)", ["repository", "title", "head", "base"]],
  ["repository", "git repository holding a project's source code", ["owner", "name", "visibility"]],
  ["branch", "git branch of a repository", ["repository", "name", "from"]],
  ["commit", "git commit (a recorded change to the code)", ["repository", "sha", "message"]],
  ["user", "user account that can sign in", ["email", "display_name", "role"]],
  ["team", "team: a named group of users", ["name", "members"]],
  ["calendar_event", "calendar event such as a meeting or appointment", ["calendar", "start", "end", "attendees", "summary"]],
  ["email", "email message in a mailbox", ["to", "subject", "body", "mailbox"]],
  ["invoice", "invoice: a bill sent to a customer for payment", ["customer_id", "amount", "currency", "due_date"]],
  ["customer", "customer account in the CRM (a client company or person)", ["name", "email", "company"]],
  ["support_ticket", "customer support ticket (a help desk request)", ["requester", "subject", "priority", "status"]],
  ["deployment", "deployment of a service release to an environment (staging, production)", ["service", "version", "environment"]],
  ["container", "docker container running an image", ["image", "command", "ports"]],
  ["database_table", "table in a SQL database", ["database", "table", "columns"]],
  ["spreadsheet", "spreadsheet with sheets, rows and cells", ["title", "sheet", "range", "values"]],
  ["document", "text document or wiki page", ["title", "content", "folder"]],
  ["chat_message", "chat message posted in a Slack channel or conversation", ["channel", "text", "thread"]],
  ["channel", "chat channel (a Slack room) where people talk", ["name", "topic", "private"]],
  ["dashboard", "monitoring dashboard of charts and graphs", ["title", "panels"]],
  ["alert", "monitoring alert rule that pages the on-call engineer", ["metric", "threshold", "severity"]],
  ["dns_record", "DNS record mapping a domain name (A, CNAME, MX)", ["zone", "type", "name", "value"]],
  ["certificate", "TLS certificate for HTTPS on a domain", ["domain", "issuer", "expires"]],
  ["payment", "payment: a charge made to a credit card", ["amount", "currency", "card", "customer_id"]],
  ["subscription", "subscription: a recurring billing plan of a customer", ["customer_id", "plan", "interval"]],
  ["order", "order placed in the online shop (a purchase)", ["customer_id", "items", "shipping_address"]],
  ["product", "product in the store catalog (an inventory item with a price)", ["sku", "name", "price", "stock"]],
  ["secret", "secret such as an API key or password kept in the vault", ["path", "value"]],
  ["cron_job", "scheduled cron job that runs a command periodically", ["schedule", "command"]],
  ["virtual_machine", "virtual machine: a cloud server instance", ["region", "size", "image"]],
];

// [action, description template, read only?, parameters of its own]
const actions = [
  ["create", (t) => `Create a new ${t}.`, false, (f) => f],
  ["get", (t) => `Get the details of one ${t} by its id.`, true, () => ["id"]],
  ["list", (t) => `List every ${t}, a page at a time.`, true, () => ["limit", "cursor"]],
  ["update", (t) => `Update (edit) the fields of an existing ${t}.`, false, (f) => ["id", ...f]],
  ["delete", (t) => `Delete (permanently remove) a ${t}.`, false, () => ["id"]],
  ["search", (t) => `Search for each ${t} matching a text query.`, true, () => ["query", "limit"]],
  ["archive", (t) => `Archive a ${t}: hide it without deleting it.`, false, () => ["id"]],
  ["restore", (t) => `Restore an archived ${t}, making it visible again.`, false, () => ["id"]],
  ["export", (t) => `Export each ${t} to a CSV or JSON file for download.`, true, () => ["format", "filter"]],
  ["count", (t) => `Count how many exist of ${t} matching a filter.`, true, () => ["filter"]],
];

const tools = [];
for (const [name, what, fields] of things) {
  for (const [action, describe, readOnly, params] of actions) {
    const properties = {};
    for (const p of params(fields)) properties[p] = { type: "string", description: `the ${p.replaceAll("_", " ")}` };
    tools.push({
      name: `${action}_${name}`,
      description: describe(what),
      inputSchema: { type: "object", properties, additionalProperties: false },
      annotations: { readOnlyHint: readOnly },
    });
  }
}

const server = new Server({ name: "manytools", version: "1.0.0" }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
server.setRequestHandler(CallToolRequestSchema, async (req) => {
  if (!tools.some((t) => t.name === req.params.name)) {
    return { isError: true, content: [{ type: "text", text: `no tool ${req.params.name}` }] };
  }
  return { content: [{ type: "text", text: JSON.stringify({ tool: req.params.name, arguments: req.params.arguments ?? {} }) }] };
});
await server.connect(new StdioServerTransport());
