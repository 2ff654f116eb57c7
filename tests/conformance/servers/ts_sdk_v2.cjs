// A small server built with the TypeScript SDK v2 (@modelcontextprotocol/server 2.x), for
// the suite's third-party runs: `scripts/third-party.sh command ts-sdk-v2` prints the
// node invocation (NODE_PATH set to the cached install), this script and PORT follow.
// Served by plain node:http on 127.0.0.1, bridged to the SDK's fetch-shaped handler.
"use strict";
const http = require("node:http");
const { createMcpHandler, McpServer } = require("@modelcontextprotocol/server");
const z = require("zod");

function factory() {
  const server = new McpServer({ name: "ts-sdk-v2-sample", version: "1.0.0" });
  server.registerTool("echo", {
    description: "Echo the text back.",
    inputSchema: z.object({ text: z.string() }),
    annotations: { readOnlyHint: true },
  }, async ({ text }) => ({ content: [{ type: "text", text }] }));
  server.registerTool("add", {
    description: "Add two integers.",
    inputSchema: z.object({ a: z.number().int(), b: z.number().int() }),
    annotations: { readOnlyHint: true },
  }, async ({ a, b }) => ({ content: [{ type: "text", text: String(a + b) }] }));
  server.registerResource("readme", "sample://readme", { mimeType: "text/plain" },
    async (uri) => ({ contents: [{ uri: uri.href, text: "A sample server." }] }));
  server.registerPrompt("greet", {
    description: "Greet someone by name.",
    argsSchema: z.object({ name: z.string() }),
  }, ({ name }) => ({ messages: [{ role: "user", content: { type: "text", text: `Hello, ${name}!` } }] }));
  return server;
}

const handler = createMcpHandler(factory);
const port = Number(process.argv[2]);

http.createServer(async (req, res) => {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const body = Buffer.concat(chunks);
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (Array.isArray(value)) value.forEach((v) => headers.append(name, v));
    else if (value !== undefined) headers.set(name, value);
  }
  const abort = new AbortController();
  res.on("close", () => abort.abort());
  const request = new Request(`http://${req.headers.host}${req.url}`, {
    method: req.method, headers, signal: abort.signal,
    body: ["GET", "HEAD"].includes(req.method) || body.length === 0 ? undefined : body,
  });
  let response;
  try {
    response = await handler.fetch(request);
  } catch (error) {
    res.writeHead(500).end();
    return;
  }
  res.writeHead(response.status, Object.fromEntries(response.headers));
  if (!response.body) { res.end(); return; }
  const reader = response.body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      res.write(value);
    }
  } catch { /* the client went away */ }
  res.end();
}).listen(port, "127.0.0.1");
