import { readFile } from "node:fs/promises";
import path from "node:path";
import { Template } from "@huggingface/jinja";
import { Tokenizer } from "@huggingface/tokenizers";
import { z } from "zod";
import { readGgufTokenizer } from "./gguf-tokenizer.js";
import { messageText, promptPieces, type GatewayBody } from "../wire/prompt-text.js";

/**
 * Without the model's tokenizer the gateway estimates: one token per 4 bytes
 * of UTF-8 (English text runs 4 to 5 bytes per token on Llama, Qwen and GPT
 * tokenizers), plus 4 tokens per chat message for the template's role markers.
 * Code and non-Latin scripts take more tokens than that, so the estimate
 * counts low: the gateway refuses only what is surely over, and the engine
 * refuses the rest with its own 400, which reaches the client as it is.
 */
export const estimateBytesPerToken = 4;
export const estimateTokensPerMessage = 4;

export function estimateTokens(text: string): number {
  return Math.ceil(Buffer.byteLength(text, "utf8") / estimateBytesPerToken);
}

/**
 * The tool definitions of a chat body and the tool calls in its messages,
 * by estimate: the prompt count leaves them out (a chat template renders
 * them each its own way), and a count asked for by the client
 * (count_tokens) would be short by all of them.
 */
export function estimateToolTokens(body: GatewayBody): number {
  const loose = body as GatewayBody & { tools?: unknown };
  let text = Array.isArray(loose.tools) && loose.tools.length > 0 ? JSON.stringify(loose.tools) : "";
  for (const message of body.messages ?? []) {
    const calls = (message as { tool_calls?: unknown }).tool_calls;
    if (Array.isArray(calls) && calls.length > 0) text += JSON.stringify(calls);
  }
  return text.length === 0 ? 0 : estimateTokens(text);
}

interface LoadedTokenizer {
  readonly tokenizer: Tokenizer;
  readonly template: Template | undefined;
  readonly specialTokens: Record<string, string>;
}

const tokenizerConfigSchema = z.looseObject({
  chat_template: z.union([z.string(), z.array(z.looseObject({ name: z.string(), template: z.string() }))]).optional(),
  bos_token: z.union([z.string(), z.looseObject({ content: z.string() }), z.null()]).optional(),
  eos_token: z.union([z.string(), z.looseObject({ content: z.string() }), z.null()]).optional(),
});

/**
 * Counts prompts the way the model's engine will, where the model's files
 * say how: tokenizer.json read by @huggingface/tokenizers, and the chat
 * template of tokenizer_config.json rendered by @huggingface/jinja. Loaded
 * once per model off the request path (a request never waits for a file);
 * until loaded, or when the files are not there, the estimate counts.
 */
export class TokenCounter {
  readonly #loaded = new Map<string, LoadedTokenizer | "loading" | "absent">();

  constructor(private readonly onLoadFailure: (model: string, reason: string) => void = () => undefined) {}

  /** Starts loading the tokenizer of each model whose files are in a local folder; already known ones are left alone. */
  prepare(models: readonly { readonly name: string; readonly tokenizer: string | null }[]): void {
    for (const model of models) {
      const key = `${model.name}\u0000${model.tokenizer ?? ""}`;
      if (this.#loaded.has(key)) continue;
      if (model.tokenizer === null || (/^[a-z]+:\/\//i.test(model.tokenizer) && !isGgufUrl(model.tokenizer))) {
        // Remote folders are not fetched by the gateway: counting must not depend on a hub being up.
        // A GGUF's header is read once, off the request path; until then, or when it fails, the estimate counts.
        this.#loaded.set(key, "absent");
        continue;
      }
      this.#loaded.set(key, "loading");
      void loadTokenizer(model.tokenizer).then(
        (loaded) => this.#loaded.set(key, loaded ?? "absent"),
        (error: unknown) => {
          this.#loaded.set(key, "absent");
          this.onLoadFailure(model.name, (error as Error).message);
        },
      );
    }
  }

  /** True when `model` is counted with its own tokenizer (for tests and the log). */
  hasTokenizer(model: { readonly name: string; readonly tokenizer: string | null }): boolean {
    return typeof this.#loaded.get(`${model.name}\u0000${model.tokenizer ?? ""}`) === "object";
  }

  /** Prompt tokens of a chat, completion or embedding body. */
  count(model: { readonly name: string; readonly tokenizer: string | null }, body: GatewayBody): number {
    const loaded = this.#loaded.get(`${model.name}\u0000${model.tokenizer ?? ""}`);
    const tokenizer = typeof loaded === "object" ? loaded : undefined;
    if (body.messages) {
      if (tokenizer?.template) {
        try {
          const rendered = tokenizer.template.render({ messages: body.messages, add_generation_prompt: true, ...tokenizer.specialTokens });
          return tokenizer.tokenizer.encode(rendered, { add_special_tokens: false }).ids.length;
        } catch {
          // A template that needs what this request lacks (tools, a strict role order) falls back to counting the text.
        }
      }
      let total = 0;
      for (const message of body.messages) {
        const text = messageText(message);
        total += (tokenizer ? tokenizer.tokenizer.encode(text, { add_special_tokens: false }).ids.length : estimateTokens(text)) + estimateTokensPerMessage;
      }
      return total;
    }
    const pieces = promptPieces(body.prompt ?? body.input);
    let total = pieces.tokenIds;
    for (const text of pieces.texts) total += tokenizer ? tokenizer.tokenizer.encode(text).ids.length : estimateTokens(text);
    return total;
  }
}

function isGgufUrl(source: string): boolean {
  return /^https?:\/\/[^#?]+\.gguf(#sha256=[0-9a-f]{64})?$/i.test(source);
}

async function loadGgufTokenizer(source: string): Promise<LoadedTokenizer | undefined> {
  const read = await readGgufTokenizer(source);
  if (read === undefined) return undefined;
  return {
    tokenizer: new Tokenizer(read.tokenizerJson, {}),
    template: read.chatTemplate === undefined ? undefined : new Template(read.chatTemplate),
    specialTokens: { bos_token: read.bosToken, eos_token: read.eosToken },
  };
}

async function loadTokenizer(source: string): Promise<LoadedTokenizer | undefined> {
  // A GGUF file carries its vocabulary in its header.
  if (/\.gguf(#sha256=[0-9a-f]{64})?$/i.test(source)) return await loadGgufTokenizer(source);
  const folder = source;
  let tokenizerText: string;
  try {
    tokenizerText = await readFile(path.join(folder, "tokenizer.json"), "utf8");
  } catch {
    return undefined;
  }
  const configText = await readFile(path.join(folder, "tokenizer_config.json"), "utf8").catch(() => "{}");
  const config = tokenizerConfigSchema.parse(JSON.parse(configText));
  const tokenizer = new Tokenizer(JSON.parse(tokenizerText) as object, config);
  const templateText = Array.isArray(config.chat_template)
    ? (config.chat_template.find((named) => named.name === "default") ?? config.chat_template[0])?.template
    : config.chat_template;
  const tokenText = (token: z.infer<typeof tokenizerConfigSchema>["bos_token"]) => (typeof token === "string" ? token : (token?.content ?? ""));
  return {
    tokenizer,
    template: templateText === undefined ? undefined : new Template(templateText),
    specialTokens: { bos_token: tokenText(config.bos_token), eos_token: tokenText(config.eos_token) },
  };
}
