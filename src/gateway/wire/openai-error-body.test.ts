import { afterEach, describe, expect, it } from "vitest";
import { RetryLater } from "./retry-later.js";
import { openAIErrorAnswer } from "./openai-error-body.js";

describe("a /v1 refusal's hint", () => {
  const before = process.env.npm_command;
  afterEach(() => {
    if (before === undefined) delete process.env.npm_command;
    else process.env.npm_command = before;
  });
  const loading = () => new RetryLater("model_loading", "model m is loading", "Retry in 30 s; `llmgw ctl replicas --model m` shows its progress.", 30);

  it("names `npx llmgw` when the gateway was started through npx, as a clone runs it", () => {
    process.env.npm_command = "exec";
    const answer = openAIErrorAnswer(loading(), "r1");
    expect(answer.status).toBe(503);
    expect(answer.body.error.message).toBe("model m is loading. Retry in 30 s; `npx llmgw ctl replicas --model m` shows its progress.");
  });

  it("names bare `llmgw` otherwise", () => {
    delete process.env.npm_command;
    expect(openAIErrorAnswer(loading(), "r1").body.error.message).toContain("`llmgw ctl replicas --model m`");
  });
});
