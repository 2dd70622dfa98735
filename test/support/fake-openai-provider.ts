import { createServer, type Server } from "node:http";

/** What the fake provider reports as usage on every answer. */
export const fakeProviderUsage = { promptTokens: 11, completionTokens: 7 };

/**
 * A local stand-in for an external OpenAI-compatible provider: answers chat
 * completions with "hi" (streamed or not) and reports its own usage, as a
 * hosted provider does. A request for a model whose name starts with "slow"
 * is answered after `slowMs`, so a test can hold requests in flight.
 */
export function fakeOpenAIProvider(options: { slowMs?: number } = {}): Server {
  return createServer((request, response) => {
    let text = "";
    request.on("data", (chunk: Buffer) => (text += chunk.toString()));
    request.on("end", () => {
      const body = JSON.parse(text) as { model: string; stream?: boolean; stream_options?: { include_usage?: boolean } };
      const { promptTokens, completionTokens } = fakeProviderUsage;
      const usage = { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens };
      const base = { id: "chatcmpl-fake", created: 1, model: body.model };
      const answer = () => {
        if (!body.stream) {
          response.writeHead(200, { "content-type": "application/json" });
          response.end(JSON.stringify({ ...base, object: "chat.completion", choices: [{ index: 0, message: { role: "assistant", content: "hi" }, finish_reason: "stop" }], usage }));
          return;
        }
        response.writeHead(200, { "content-type": "text/event-stream" });
        const event = (value: unknown) => response.write(`data: ${JSON.stringify(value)}\n\n`);
        event({ ...base, object: "chat.completion.chunk", choices: [{ index: 0, delta: { role: "assistant", content: "hi" }, finish_reason: null }] });
        event({ ...base, object: "chat.completion.chunk", choices: [{ index: 0, delta: {}, finish_reason: "stop" }] });
        if (body.stream_options?.include_usage) event({ ...base, object: "chat.completion.chunk", choices: [], usage });
        response.end("data: [DONE]\n\n");
      };
      if (body.model.startsWith("slow")) setTimeout(answer, options.slowMs ?? 1000);
      else answer();
    });
  });
}

/** Listens on a free loopback port; resolves the port. */
export async function listenOnLoopback(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  return typeof address === "object" && address ? address.port : 0;
}
