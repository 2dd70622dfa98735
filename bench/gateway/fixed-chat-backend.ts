/**
 * The backend every side of the gateway benchmark calls: a minimal
 * OpenAI-shaped chat completion server on node:http that answers at once
 * with a fixed completion (or a fixed five-event SSE stream), so what is
 * measured is the path in front of it, not an engine.
 *
 * Run as its own process (`node fixed-chat-backend.js`): it listens on a
 * free loopback port and prints `listening PORT` on stdout.
 */
import { createServer } from "node:http";

const created = Math.floor(Date.now() / 1000);
const usage = { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 };
const completion = Buffer.from(
  JSON.stringify({
    id: "chatcmpl-bench",
    object: "chat.completion",
    created,
    model: "bench",
    choices: [{ index: 0, message: { role: "assistant", content: "Hello from the bench." }, finish_reason: "stop" }],
    usage,
  }),
);
const chunk = (delta: Record<string, unknown>, finish: string | null) =>
  `data: ${JSON.stringify({ id: "chatcmpl-bench", object: "chat.completion.chunk", created, model: "bench", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
const streamEvents = [chunk({ role: "assistant", content: "" }, null), chunk({ content: "Hello" }, null), chunk({ content: " from the bench." }, null), chunk({}, "stop")];
const usageEvent = `data: ${JSON.stringify({ id: "chatcmpl-bench", object: "chat.completion.chunk", created, model: "bench", choices: [], usage })}\n\n`;

const server = createServer((request, response) => {
  const parts: Buffer[] = [];
  request.on("data", (part: Buffer) => parts.push(part));
  request.on("end", () => {
    if (request.method !== "POST" || !request.url?.endsWith("/chat/completions")) {
      response.writeHead(404, { "content-type": "application/json" }).end('{"error":{"message":"not found","type":"invalid_request_error","code":null}}');
      return;
    }
    const body = Buffer.concat(parts).toString();
    if (!/"stream"\s*:\s*true/.test(body)) {
      response.writeHead(200, { "content-type": "application/json", "content-length": completion.length }).end(completion);
      return;
    }
    response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    // One write per event, as an engine sends them: a proxy that buffers shows it here.
    for (const event of streamEvents) response.write(event);
    if (/"include_usage"\s*:\s*true/.test(body)) response.write(usageEvent);
    response.end("data: [DONE]\n\n");
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, "127.0.0.1", () => {
  const address = server.address();
  process.stdout.write(`listening ${typeof address === "object" && address ? address.port : 0}\n`);
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
