import { errorFromResponse } from "./api.ts";

export interface ChatFigures {
  readonly text: string;
  readonly ttftMs: number | null;
  readonly tokensPerSecond: number | null;
  readonly promptTokens: number | null;
  readonly completionTokens: number | null;
  readonly done: boolean;
}

export function gatewayHeaders(key: string): Record<string, string> {
  return { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}) };
}

/**
 * One chat completion streamed through the gateway's /v1 (OpenAI's SSE:
 * `data: {chunk}` lines, then `data: [DONE]`), reporting the text as it
 * grows, the time to its first token, and tokens per second after it.
 */
export async function streamChat(model: string, prompt: string, key: string, onUpdate: (figures: ChatFigures) => void, signal: AbortSignal): Promise<void> {
  const started = performance.now();
  const response = await fetch("/v1/chat/completions", {
    method: "POST",
    headers: gatewayHeaders(key),
    body: JSON.stringify({ model, stream: true, stream_options: { include_usage: true }, messages: [{ role: "user", content: prompt }] }),
    signal,
  });
  if (!response.ok || !response.body) throw await errorFromResponse(response);
  let figures: ChatFigures = { text: "", ttftMs: null, tokensPerSecond: null, promptTokens: null, completionTokens: null, done: false };
  let firstAt: number | null = null;
  let chunks = 0;
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    const lines = buffer.split("\n");
    buffer = lines.pop() ?? "";
    for (const line of lines) {
      const data = line.startsWith("data:") ? line.slice(5).trim() : null;
      if (!data || data === "[DONE]") continue;
      const chunk = JSON.parse(data) as { choices?: { delta?: { content?: string | null } }[]; usage?: { prompt_tokens?: number; completion_tokens?: number } | null };
      const piece = chunk.choices?.[0]?.delta?.content ?? "";
      if (piece) {
        const now = performance.now();
        firstAt ??= now;
        chunks += 1;
        const seconds = (now - firstAt) / 1000;
        figures = { ...figures, text: figures.text + piece, ttftMs: firstAt - started, tokensPerSecond: seconds > 0 ? (chunks - 1) / seconds : null };
      }
      if (chunk.usage) figures = { ...figures, promptTokens: chunk.usage.prompt_tokens ?? null, completionTokens: chunk.usage.completion_tokens ?? null };
      onUpdate(figures);
    }
  }
  const seconds = firstAt === null ? 0 : (performance.now() - firstAt) / 1000;
  const tokens = figures.completionTokens ?? chunks;
  onUpdate({ ...figures, tokensPerSecond: seconds > 0 ? tokens / seconds : figures.tokensPerSecond, done: true });
}

export function cosine(a: readonly number[], b: readonly number[]): number {
  let dot = 0;
  let normA = 0;
  let normB = 0;
  for (let index = 0; index < Math.min(a.length, b.length); index += 1) {
    const x = a[index] ?? 0;
    const y = b[index] ?? 0;
    dot += x * y;
    normA += x * x;
    normB += y * y;
  }
  return normA === 0 || normB === 0 ? 0 : dot / Math.sqrt(normA * normB);
}

/** The request on screen as curl, Python (openai) and Node (openai) lines. */
export function codeLines(base: string, model: string, prompt: string): { curl: string; python: string; node: string } {
  const body = JSON.stringify({ model, stream: true, messages: [{ role: "user", content: prompt }] });
  const quoted = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;
  return {
    curl: `curl -sN ${base}/v1/chat/completions -H 'content-type: application/json' -H "authorization: Bearer $LLMGW_KEY" \\\n  -d ${quoted(body)}`,
    python: `from openai import OpenAI\nclient = OpenAI(base_url="${base}/v1", api_key=os.environ.get("LLMGW_KEY", "none"))\nfor chunk in client.chat.completions.create(model=${JSON.stringify(model)}, stream=True, messages=[{"role": "user", "content": ${JSON.stringify(prompt)}}]):\n    print(chunk.choices[0].delta.content or "", end="", flush=True) if chunk.choices else None`,
    node: `import OpenAI from "openai";\nconst client = new OpenAI({ baseURL: "${base}/v1", apiKey: process.env.LLMGW_KEY ?? "none" });\nconst stream = await client.chat.completions.create({ model: ${JSON.stringify(model)}, stream: true, messages: [{ role: "user", content: ${JSON.stringify(prompt)} }] });\nfor await (const chunk of stream) process.stdout.write(chunk.choices[0]?.delta?.content ?? "");`,
  };
}
