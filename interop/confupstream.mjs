// confupstream.mjs is the test upstream of the conformance run
// (conformance_test.go): a stdio MCP server, written with the TypeScript
// SDK's low-level Server so every schema and content block goes out as
// written, that implements what the official suite's scenarios ask a
// server for (each scenario's "Server Implementation Requirements"):
// the test_* tools (text, image, audio, embedded resource, mixed content,
// logging, error, progress, sampling, elicitation, SEP-1034 defaults,
// SEP-1330 enums), the JSON Schema 2020-12 tool, the test:// resources and
// template, subscriptions, the two prompts with non-text content, and
// completions of a prompt's and of the template's arguments.
// harness serves it through its broker as conf__NAME and harness://conf/URI.
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import {
  CallToolRequestSchema, ListToolsRequestSchema, ListResourcesRequestSchema, ListResourceTemplatesRequestSchema,
  ReadResourceRequestSchema, SubscribeRequestSchema, UnsubscribeRequestSchema, ListPromptsRequestSchema,
  GetPromptRequestSchema, ElicitResultSchema, CreateMessageResultSchema, CompleteRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";

// A 1x1 red PNG and a tiny WAV (44-byte header, two silent samples).
const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
const wav = Buffer.concat([
  Buffer.from("RIFF"), u32(40), Buffer.from("WAVEfmt "), u32(16), u16(1), u16(1), u32(8000), u32(16000), u16(2), u16(16),
  Buffer.from("data"), u32(4), Buffer.alloc(4),
]).toString("base64");
function u32(n) { const b = Buffer.alloc(4); b.writeUInt32LE(n); return b; }
function u16(n) { const b = Buffer.alloc(2); b.writeUInt16LE(n); return b; }
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const noArgs = { type: "object", properties: {} };
const ro = { readOnlyHint: true };

const tools = [
  { name: "test_simple_text", description: "Returns simple text.", inputSchema: noArgs, annotations: ro },
  { name: "test_image_content", description: "Returns an image.", inputSchema: noArgs, annotations: ro },
  { name: "test_audio_content", description: "Returns audio.", inputSchema: noArgs, annotations: ro },
  { name: "test_embedded_resource", description: "Returns an embedded resource.", inputSchema: noArgs, annotations: ro },
  { name: "test_multiple_content_types", description: "Returns text, an image and a resource.", inputSchema: noArgs, annotations: ro },
  { name: "test_tool_with_logging", description: "Logs three messages while it runs.", inputSchema: noArgs, annotations: ro },
  { name: "test_error_handling", description: "Always fails.", inputSchema: noArgs, annotations: ro },
  { name: "test_tool_with_progress", description: "Reports progress 0, 50, 100 of 100.", inputSchema: noArgs, annotations: ro },
  { name: "test_sampling", description: "Asks the client for a completion.", annotations: ro,
    inputSchema: { type: "object", properties: { prompt: { type: "string" } }, required: ["prompt"] } },
  { name: "test_elicitation", description: "Asks the user for a username and email.", annotations: ro,
    inputSchema: { type: "object", properties: { message: { type: "string" } }, required: ["message"] } },
  { name: "test_elicitation_sep1034_defaults", description: "Elicitation with defaults for every primitive type.", inputSchema: noArgs, annotations: ro },
  { name: "test_elicitation_sep1330_enums", description: "Elicitation with the five enum forms.", inputSchema: noArgs, annotations: ro },
  { name: "json_schema_2020_12_tool", description: "Tool with JSON Schema 2020-12 features", annotations: ro,
    inputSchema: {
      $schema: "https://json-schema.org/draft/2020-12/schema", type: "object",
      $defs: { address: { type: "object", properties: { street: { type: "string" }, city: { type: "string" } } } },
      properties: { name: { type: "string" }, address: { $ref: "#/$defs/address" } },
      additionalProperties: false,
    } },
];

const server = new Server({ name: "conformance-upstream", version: "1.0.0" },
  { capabilities: { tools: {}, logging: {}, resources: { subscribe: true }, prompts: {}, completions: {} } });

server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
  const args = req.params.arguments ?? {};
  const text = (t) => ({ content: [{ type: "text", text: t }] });
  switch (req.params.name) {
    case "test_simple_text":
      return text("This is a simple text response for testing.");
    case "test_image_content":
      return { content: [{ type: "image", data: png, mimeType: "image/png" }] };
    case "test_audio_content":
      return { content: [{ type: "audio", data: wav, mimeType: "audio/wav" }] };
    case "test_embedded_resource":
      return { content: [{ type: "resource", resource: { uri: "test://embedded-resource", mimeType: "text/plain", text: "This is an embedded resource content." } }] };
    case "test_multiple_content_types":
      return { content: [
        { type: "text", text: "Multiple content types test:" },
        { type: "image", data: png, mimeType: "image/png" },
        { type: "resource", resource: { uri: "test://mixed-content-resource", mimeType: "application/json", text: JSON.stringify({ test: "data", value: 123 }) } },
      ] };
    case "test_tool_with_logging":
      for (const [i, msg] of ["Tool execution started", "Tool processing data", "Tool execution completed"].entries()) {
        if (i > 0) await sleep(50);
        await extra.sendNotification({ method: "notifications/message", params: { level: "info", data: msg } });
      }
      return text("Tool with logging executed successfully");
    case "test_error_handling":
      return { isError: true, content: [{ type: "text", text: "This tool intentionally returns an error for testing" }] };
    case "test_tool_with_progress": {
      const token = req.params._meta?.progressToken;
      for (const [i, p] of [0, 50, 100].entries()) {
        if (i > 0) await sleep(50);
        if (token !== undefined) await extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, progress: p, total: 100 } });
      }
      return text("Tool with progress executed successfully");
    }
    case "test_sampling": {
      const r = await extra.sendRequest({ method: "sampling/createMessage", params: {
        messages: [{ role: "user", content: { type: "text", text: String(args.prompt ?? "") } }], maxTokens: 100 } }, CreateMessageResultSchema);
      return text(`LLM response: ${r.content?.type === "text" ? r.content.text : JSON.stringify(r.content)}`);
    }
    case "test_elicitation": {
      const r = await extra.sendRequest({ method: "elicitation/create", params: { message: String(args.message ?? ""), requestedSchema: {
        type: "object", properties: { username: { type: "string", description: "User's response" }, email: { type: "string", description: "User's email address" } },
        required: ["username", "email"] } } }, ElicitResultSchema);
      return text(`User response: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`);
    }
    case "test_elicitation_sep1034_defaults": {
      const r = await extra.sendRequest({ method: "elicitation/create", params: { message: "Please review the defaults", requestedSchema: {
        type: "object", properties: {
          name: { type: "string", default: "John Doe" },
          age: { type: "integer", default: 30 },
          score: { type: "number", default: 95.5 },
          status: { type: "string", enum: ["active", "inactive", "pending"], default: "active" },
          verified: { type: "boolean", default: true },
        } } } }, ElicitResultSchema);
      return text(`Elicitation completed: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`);
    }
    case "test_elicitation_sep1330_enums": {
      const r = await extra.sendRequest({ method: "elicitation/create", params: { message: "Pick options", requestedSchema: {
        type: "object", properties: {
          untitledSingle: { type: "string", enum: ["option1", "option2", "option3"] },
          titledSingle: { type: "string", oneOf: [{ const: "value1", title: "First Option" }, { const: "value2", title: "Second Option" }, { const: "value3", title: "Third Option" }] },
          legacyEnum: { type: "string", enum: ["opt1", "opt2", "opt3"], enumNames: ["Option One", "Option Two", "Option Three"] },
          untitledMulti: { type: "array", items: { type: "string", enum: ["option1", "option2", "option3"] } },
          titledMulti: { type: "array", items: { anyOf: [{ const: "value1", title: "First Choice" }, { const: "value2", title: "Second Choice" }, { const: "value3", title: "Third Choice" }] } },
        } } } }, ElicitResultSchema);
      return text(`Elicitation completed: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`);
    }
    case "json_schema_2020_12_tool":
      return text(`received ${JSON.stringify(args)}`);
  }
  return { isError: true, content: [{ type: "text", text: `no tool ${req.params.name}` }] };
});

const resources = [
  { uri: "test://static-text", name: "static-text", description: "A static text resource", mimeType: "text/plain" },
  { uri: "test://static-binary", name: "static-binary", description: "A static binary resource (a PNG)", mimeType: "image/png" },
  { uri: "test://watched-resource", name: "watched-resource", description: "A resource to subscribe to", mimeType: "text/plain" },
];
const subscribed = new Set();
server.setRequestHandler(ListResourcesRequestSchema, async () => ({ resources }));
server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({ resourceTemplates: [
  { uriTemplate: "test://template/{id}/data", name: "template-data", description: "Data for an id", mimeType: "application/json" },
] }));
server.setRequestHandler(ReadResourceRequestSchema, async (req) => {
  const uri = req.params.uri;
  if (uri === "test://static-text") return { contents: [{ uri, mimeType: "text/plain", text: "This is the content of the static text resource." }] };
  if (uri === "test://static-binary") return { contents: [{ uri, mimeType: "image/png", blob: png }] };
  if (uri === "test://watched-resource") return { contents: [{ uri, mimeType: "text/plain", text: "Watched." }] };
  const m = /^test:\/\/template\/([^/]+)\/data$/.exec(uri);
  if (m) return { contents: [{ uri, mimeType: "application/json", text: JSON.stringify({ id: m[1], templateTest: true, data: `Data for ID: ${m[1]}` }) }] };
  throw new Error(`no resource ${uri}`);
});
server.setRequestHandler(SubscribeRequestSchema, async (req) => { subscribed.add(req.params.uri); return {}; });
server.setRequestHandler(UnsubscribeRequestSchema, async (req) => { subscribed.delete(req.params.uri); return {}; });

server.setRequestHandler(ListPromptsRequestSchema, async () => ({ prompts: [
  { name: "test_prompt_with_embedded_resource", description: "A prompt with an embedded resource", arguments: [{ name: "resourceUri", description: "URI of the resource to embed", required: true }] },
  { name: "test_prompt_with_image", description: "A prompt with an image" },
  // completion-complete completes arg1 of this prompt; harness's own
  // (markdown) prompt of the same name answers prompts/get, and offers no
  // completions (they are an upstream's only).
  { name: "test_prompt_with_arguments", description: "A prompt with two arguments", arguments: [
    { name: "arg1", description: "First test argument", required: true },
    { name: "arg2", description: "Second test argument", required: true },
  ] },
] }));
server.setRequestHandler(GetPromptRequestSchema, async (req) => {
  if (req.params.name === "test_prompt_with_embedded_resource") {
    return { messages: [
      { role: "user", content: { type: "resource", resource: { uri: req.params.arguments?.resourceUri ?? "test://example-resource", mimeType: "text/plain", text: "Embedded resource content for testing." } } },
      { role: "user", content: { type: "text", text: "Please process the embedded resource above." } },
    ] };
  }
  if (req.params.name === "test_prompt_with_image") {
    return { messages: [
      { role: "user", content: { type: "image", data: png, mimeType: "image/png" } },
      { role: "user", content: { type: "text", text: "Please analyze the image above." } },
    ] };
  }
  throw new Error(`no prompt ${req.params.name}`);
});

// Completions: the values that start with what was typed, so a test sees
// its own input's effect; the ref names what is completed (this server's own
// names: harness strips its namespace on the way here).
const choices = {
  "ref/prompt test_prompt_with_arguments arg1": ["paris", "park", "party", "test-one", "test-two"],
  "ref/prompt test_prompt_with_arguments arg2": ["alpha", "beta"],
  "ref/resource test://template/{id}/data id": ["1", "12", "123", "2"],
};
server.setRequestHandler(CompleteRequestSchema, async (req) => {
  const { ref, argument } = req.params;
  const all = choices[`${ref.type} ${ref.name ?? ref.uri} ${argument.name}`];
  if (!all) throw new Error(`no completions for ${ref.type} ${ref.name ?? ref.uri} argument ${argument.name}`);
  const values = all.filter((v) => v.startsWith(argument.value));
  return { completion: { values, total: values.length, hasMore: false } };
});

await server.connect(new StdioServerTransport());
