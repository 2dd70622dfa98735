import OpenAI from "openai";
import { describe, expect, it } from "vitest";
import { refusalOf, runRow, stopFrom, type BatteryTarget } from "./battery.js";
import { batteryTable, failureReason } from "./battery-table.js";

const target: BatteryTarget = { engine: "llama", url: "http://127.0.0.1:1", key: "k", chatModel: "tiny", embeddingModel: "tiny" };
const badRequest = (param: string) => new OpenAI.BadRequestError(400, { message: "no", type: "BadRequestError", param, code: 400 }, "no", new Headers());

describe("a battery row's outcome", () => {
  it("is a refusal only when the engine refused the parameter the row expects it to, with a 400", async () => {
    const refusing = { client: "c", feature: "n", refusedBy: { llama: "n" }, run: () => Promise.reject(badRequest("n")) };
    expect(await runRow(refusing, target)).toEqual({ kind: "refused", param: "n" });
    await expect(runRow({ ...refusing, run: () => Promise.reject(badRequest("logprobs")) }, target)).rejects.toThrow("no");
    await expect(runRow({ ...refusing, refusedBy: { sim: "n" } }, target)).rejects.toThrow("no");
    expect(await runRow({ client: "c", feature: "chat", run: () => Promise.resolve() }, target)).toEqual({ kind: "pass" });
  });

  it("reads status and param from each client's error: openai's fields, the AI SDK's response body", () => {
    expect(refusalOf(badRequest("top_p"))).toMatchObject({ status: 400, param: "top_p" });
    const aiSdk = { statusCode: 400, responseBody: JSON.stringify({ error: { message: "no", param: "temperature" } }) };
    expect(refusalOf(aiSdk)).toMatchObject({ status: 400, param: "temperature" });
    expect(refusalOf({ cause: aiSdk })).toMatchObject({ status: 400 });
    expect(refusalOf(new Error("no status"))).toBeUndefined();
  });
});

describe("the stop row's sequence", () => {
  it("comes from the middle of the answer, printable, with the text before its first occurrence", () => {
    expect(stopFrom("Simulated answer from m: Count to ten")).toEqual({ stop: "swe", before: "Simulated an" });
    expect(() => stopFrom("\u00e9\u00e9\u00e9\u00e9")).toThrow("no stop sequence");
  });
});

describe("the client battery's table", () => {
  it("has a line per client and row, a column per engine, and the counts", () => {
    const table = batteryTable([
      { client: "openai 6.49", feature: "chat", engine: "sim", outcome: "pass" },
      { client: "openai 6.49", feature: "chat", engine: "llama", outcome: "refused (n)" },
      { client: "openai 6.49", feature: "n", engine: "sim", outcome: "fail: a | b" },
    ]);
    expect(table.split("\n")).toEqual([
      "| Client | Row | simulated engine | built-in llama.cpp |",
      "|---|---|---|---|",
      "| openai 6.49 | chat | pass | refused (n) |",
      "| openai 6.49 | n | fail: a \\| b | not run |",
      "",
      "simulated engine: 1 pass, 0 refused in shape, 1 fail of 2; built-in llama.cpp: 0 pass, 1 refused in shape, 0 fail of 1",
    ]);
  });

  it("keeps a failure's first line, shortened", () => {
    expect(failureReason("400 model tiny runs on llamacpp\n at stack")).toBe("400 model tiny runs on llamacpp");
    expect(failureReason("x".repeat(200))).toHaveLength(90);
  });
});
