// The TypeScript SDK's client (@modelcontextprotocol/client 2.x) through the gateway, for
// tests/gateway/test_third_party.py. `scripts/third-party.sh command ts-sdk-v2-client`
// prints the node invocation (NODE_PATH set to the cached install); this script, the
// gateway's URL and the era ("legacy" or "auto") follow. It runs the calls named in the
// JSON plan on stdin and prints one JSON object: the negotiated era and protocol
// version, the tool names listed, each call's outcome, and the elicitations it answered.
"use strict";
const { Client, StreamableHTTPClientTransport } = require("@modelcontextprotocol/client");

async function main() {
  const [url, mode] = process.argv.slice(2);
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  const plan = JSON.parse(Buffer.concat(chunks).toString("utf8"));
  const client = new Client({ name: "ts-sdk-through-gateway", version: "1.0.0" }, {
    capabilities: { elicitation: { form: {} } },
    versionNegotiation: { mode },
  });
  const asked = [];
  client.setRequestHandler("elicitation/create", async (request) => {
    asked.push(request.params.message);
    return { action: "accept", content: plan.answer };
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  const out = { era: client.getProtocolEra(), version: client.getNegotiatedProtocolVersion(),
                tools: [], calls: {}, reads: {}, prompts: {}, asked };
  let cursor;
  do {
    const page = await client.listTools(cursor ? { cursor } : {});
    out.tools.push(...page.tools.map((tool) => tool.name));
    cursor = page.nextCursor;
  } while (cursor);
  const text = (blocks) => blocks.filter((b) => b.type === "text").map((b) => b.text).join("\n");
  const attempt = async (bucket, key, work) => {
    try { bucket[key] = await work(); } catch (error) { bucket[key] = { error: String(error) }; }
  };
  for (const [name, args] of plan.calls) {
    await attempt(out.calls, name, async () => {
      const result = await client.callTool({ name, arguments: args });
      return { isError: Boolean(result.isError), text: text(result.content) };
    });
  }
  for (const uri of plan.reads) {
    await attempt(out.reads, uri, async () =>
      (await client.readResource({ uri })).contents.map((c) => c.text).join("\n"));
  }
  for (const [name, args] of plan.prompts) {
    await attempt(out.prompts, name, async () => {
      const result = await client.getPrompt(args ? { name, arguments: args } : { name });
      return result.messages.map((m) => m.content.text).join("\n");
    });
  }
  await client.close();
  process.stdout.write(JSON.stringify(out) + "\n");
}

main().catch((error) => { console.error(error && error.stack || String(error)); process.exit(1); });
