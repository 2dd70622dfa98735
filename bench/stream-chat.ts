/** What a bench reads of one streamed chat completion, as llama-server and the built-in engine send it. */
export interface StreamedChat {
  /** When the first text arrived and when the last did, in performance.now() time; undefined when none came. */
  readonly firstAt: number | undefined;
  readonly lastAt: number | undefined;
  readonly text: string;
  readonly usage: { prompt_tokens: number; completion_tokens: number } | undefined;
  /** llama.cpp's timings: prompt tokens read and prompt tokens the slot's cache held. */
  readonly timings: { prompt_n: number; cache_n: number } | undefined;
}

interface ChatChunk {
  choices?: { delta?: { content?: string } }[];
  usage?: { prompt_tokens: number; completion_tokens: number };
  timings?: { prompt_n: number; cache_n: number };
}

/**
 * Reads a chat completion's SSE body to its end. One reader for every bench
 * that times streams, so each counts the first token the same way: when its
 * event arrived, not when the request was sent.
 */
export async function readStreamedChat(body: AsyncIterable<Uint8Array>): Promise<StreamedChat> {
  let firstAt: number | undefined;
  let lastAt: number | undefined;
  let text = "";
  let usage: StreamedChat["usage"];
  let timings: StreamedChat["timings"];
  let buffer = "";
  const decoder = new TextDecoder();
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const event = buffer.slice(0, end).replace(/^data: /, "");
      buffer = buffer.slice(end + 2);
      if (event === "[DONE]" || event.trim() === "") continue;
      const parsed = JSON.parse(event) as ChatChunk;
      const content = parsed.choices?.[0]?.delta?.content;
      if (content) {
        const now = performance.now();
        firstAt ??= now;
        lastAt = now;
        text += content;
      }
      if (parsed.usage) usage = parsed.usage;
      if (parsed.timings) timings = parsed.timings;
    }
  }
  return { firstAt, lastAt, text, usage, timings };
}
