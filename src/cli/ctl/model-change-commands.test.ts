import { describe, expect, it } from "vitest";
import type { ModelChangeView } from "../../protocol/model-change-view.js";
import { describeModelChange } from "./model-change-commands.js";

const settings = (context: number, gpus: number, slots: number) => ({
  context,
  profiles: [
    { name: "h100", engine: "vllm" as const, gpus, slots: 1 },
    { name: "cpu", engine: "llamacpp" as const, gpus: 0, slots },
  ],
});

describe("describeModelChange", () => {
  it("prints the context before and after, the changed flags per profile, and the roll", () => {
    const view: ModelChangeView = {
      model: "qwen",
      change: "context",
      before: settings(8192, 1, 2),
      after: settings(16384, 1, 4),
      profiles: [
        { profile: "h100", engine: "vllm", arguments: [{ flag: "--max-model-len", before: "8192", after: "16384" }] },
        { profile: "cpu", engine: "llamacpp", arguments: [{ flag: "--ctx-size", before: "16384", after: "65536" }, { flag: "--parallel", before: "2", after: "4" }] },
      ],
      replicas: 2,
      in_place: false,
      restart_before: "2026-01-01T00:00:00.000Z",
    };
    expect(describeModelChange(view)).toBe(
      [
        "qwen: context 8192 tokens, 2 slots (cpu) → 16384 tokens, 4 slots (cpu)",
        "  h100 (vllm): --max-model-len 8192 → 16384",
        "  cpu (llamacpp): --ctx-size 16384 → 65536, --parallel 2 → 4",
        "Restarting 2 replicas (each new one starts beside the old, which drains once it is ready).",
      ].join("\n"),
    );
  });

  it("prints the profile whose cards changed, a flag that appears, and an in-place roll", () => {
    const view: ModelChangeView = {
      model: "qwen",
      change: "gpus",
      before: settings(8192, 1, 2),
      after: settings(8192, 2, 2),
      profiles: [{ profile: "h100", engine: "vllm", arguments: [{ flag: "--tensor-parallel-size", before: "1", after: "2" }] }, { profile: "cpu", engine: "llamacpp", arguments: [] }],
      replicas: 1,
      in_place: true,
      restart_before: "2026-01-01T00:00:00.000Z",
    };
    expect(describeModelChange(view)).toBe(
      ["qwen/h100: 1 card → 2 cards per replica", "  h100 (vllm): --tensor-parallel-size 1 → 2", "Restarting 1 replica in place (each stops before its replacement starts)."].join("\n"),
    );
  });

  it("says when the change was checked against figures kept from the files' last read", () => {
    const view: ModelChangeView = {
      model: "qwen",
      change: "gpus",
      before: settings(8192, 1, 2),
      after: settings(8192, 2, 2),
      profiles: [{ profile: "h100", engine: "vllm", arguments: [{ flag: "--tensor-parallel-size", before: "1", after: "2" }] }],
      replicas: 0,
      in_place: false,
      restart_before: "2026-01-01T00:00:00.000Z",
      stored_figures: [{ source: "hf://Qwen/Qwen2.5-7B-Instruct@main", read_at: "2026-01-01T00:00:00.000Z", unreadable: "fetch failed" }],
    };
    expect(describeModelChange(view).split("\n").at(-1)).toBe("Checked against the figures read from hf://Qwen/Qwen2.5-7B-Instruct@main at 2026-01-01T00:00:00.000Z: its files cannot be read now (fetch failed).");
  });

  it("says when nothing changed", () => {
    const view: ModelChangeView = { model: "qwen", change: "gpus", before: settings(8192, 1, 2), after: settings(8192, 1, 2), profiles: [], replicas: 0, in_place: false, restart_before: null };
    expect(describeModelChange(view)).toBe(["qwen/h100: 1 card per replica already", "qwen/cpu: 0 cards per replica already", "Nothing changed; nothing restarts."].join("\n"));
  });
});
