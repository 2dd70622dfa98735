import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { waitFor } from "../../../test/support/fake-engine.js";
import { estimateTokens, TokenCounter } from "./token-counter.js";

/** A word-level tokenizer small enough to count by hand: one token per word or run of punctuation. */
const tokenizerJson = {
  version: "1.0",
  truncation: null,
  padding: null,
  added_tokens: [],
  normalizer: null,
  pre_tokenizer: { type: "Whitespace" },
  post_processor: null,
  decoder: null,
  model: { type: "WordLevel", vocab: { "[UNK]": 0, hello: 1, world: 2 }, unk_token: "[UNK]" },
};
const chatTemplate = "{% for message in messages %}<|{{ message.role }}|> {{ message.content }} {% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}";

const folder = mkdtempSync(path.join(tmpdir(), "llmgw-tokenizer-"));
writeFileSync(path.join(folder, "tokenizer.json"), JSON.stringify(tokenizerJson));
writeFileSync(path.join(folder, "tokenizer_config.json"), JSON.stringify({ chat_template: chatTemplate, bos_token: "<s>", eos_token: "</s>" }));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

async function loaded(counter: TokenCounter, model: { name: string; tokenizer: string | null }): Promise<void> {
  await waitFor(() => counter.hasTokenizer(model), 5_000, `${model.name}'s tokenizer to load`, 10);
}

describe("TokenCounter", () => {
  it("counts a chat with the model's own tokenizer and chat template", async () => {
    const counter = new TokenCounter();
    const model = { name: "word-model", tokenizer: folder };
    counter.prepare([model]);
    await loaded(counter, model);
    expect(counter.hasTokenizer(model)).toBe(true);
    // Rendered: "<|user|> hello world <|assistant|>" → <| user |> hello world <| assistant |>
    expect(counter.count(model, { model: "word-model", messages: [{ role: "user", content: "hello world" }] })).toBe(8);
    // A completion prompt is the text alone: hello world hello
    expect(counter.count(model, { model: "word-model", prompt: "hello world hello" })).toBe(3);
  });

  it("estimates a model without tokenizer files, one token per 4 bytes plus 4 per message", () => {
    const counter = new TokenCounter();
    const model = { name: "remote-model", tokenizer: "hf://org/remote@main" };
    counter.prepare([model]);
    expect(counter.hasTokenizer(model)).toBe(false);
    expect(counter.count(model, { model: "remote-model", messages: [{ role: "user", content: "hello world" }] })).toBe(3 + 4);
    expect(counter.count(model, { model: "remote-model", prompt: [1, 2, 3, 4, 5] })).toBe(5);
    expect(estimateTokens("ünïcode")).toBe(3);
  });

  it("estimates, and says why, when the tokenizer files cannot be read", async () => {
    const broken = mkdtempSync(path.join(tmpdir(), "llmgw-tokenizer-broken-"));
    writeFileSync(path.join(broken, "tokenizer.json"), "{ not json");
    const failures: string[] = [];
    const counter = new TokenCounter((model, reason) => failures.push(`${model}: ${reason}`));
    const model = { name: "broken-model", tokenizer: broken };
    counter.prepare([model]);
    try {
      await waitFor(() => failures.length > 0, 5_000, "the counter to report the unreadable tokenizer", 10);
    } finally {
      rmSync(broken, { recursive: true, force: true });
    }
    expect(failures[0]).toMatch(/^broken-model: /);
    expect(counter.count(model, { model: "broken-model", prompt: "hello world" })).toBe(estimateTokens("hello world"));
  });
});
