import { describe, expect, it } from "vitest";
import type { PullNodeView, PullSourceView, PullView } from "../../protocol/pull-views.js";
import { describePullProgress, describePullResult, formatSize, pullFinished } from "./pull-text.js";

const MiB = 1024 * 1024;

function source(fields: Partial<PullSourceView>): PullSourceView {
  return {
    source: "mirror:gguf/q4.gguf",
    fetched_from: "https://mirror/models/gguf/q4.gguf",
    state: "fetching",
    bytes_done: 0,
    bytes_total: null,
    size_bytes: null,
    already_cached: false,
    simulated: false,
    reason: null,
    ...fields,
  };
}

function node(fields: Partial<PullNodeView>): PullNodeView {
  return { node: "cpu-1", profile: "cpu", state: "fetching", sources: [], reason: null, ...fields };
}

describe("formatSize", () => {
  it("writes bytes in binary units with one decimal", () => {
    expect(formatSize(512)).toBe("512 B");
    expect(formatSize(1536)).toBe("1.5 KiB");
    expect(formatSize(45 * MiB)).toBe("45.0 MiB");
    expect(formatSize(15.2 * 1024 * MiB)).toBe("15.2 GiB");
  });
});

describe("describePullProgress", () => {
  it("sums a node's sources, counting a finished one at its size", () => {
    const line = describePullProgress(
      node({ sources: [source({ bytes_done: 10 * MiB, bytes_total: 30 * MiB }), source({ state: "cached", bytes_done: 10 * MiB, size_bytes: 10 * MiB })] }),
    );
    expect(line).toBe("cpu-1 (cpu)  fetching  20.0 MiB of 40.0 MiB (50%)");
  });

  it("says how much so far while a size is not known", () => {
    expect(describePullProgress(node({ sources: [source({ bytes_done: 3 * MiB })] }))).toBe("cpu-1 (cpu)  fetching  3.0 MiB so far");
  });
});

describe("describePullResult", () => {
  const pull = (nodes: PullNodeView[], skipped: PullView["skipped"] = []): PullView => ({ model: "qwen", nodes, skipped });

  it("says what each node holds, and that nothing was fetched when it was all cached before", () => {
    const cached = source({ state: "cached", bytes_done: 5 * MiB, bytes_total: 5 * MiB, size_bytes: 5 * MiB, already_cached: true });
    expect(describePullResult(pull([node({ state: "cached", sources: [cached] })]))).toBe(
      ["cpu-1 (cpu)  cached 5.0 MiB (already cached: nothing fetched)", "  mirror:gguf/q4.gguf from https://mirror/models/gguf/q4.gguf  5.0 MiB, already cached"].join("\n"),
    );
  });

  it("gives each failed source its exact error, an unreachable node its reason, and the nodes left out with why", () => {
    const failed = source({ state: "failed", reason: "could not fetch https://mirror/models/gguf/q4.gguf on node cpu-1: the server answered 404 (not found)" });
    const text = describePullResult(
      pull(
        [node({ state: "failed", sources: [failed] }), node({ node: "cpu-2", state: "failed", reason: "could not reach the agent of node cpu-2" })],
        [{ node: "gpu-1", reason: "cpu: has no llamacpp installed" }],
      ),
    );
    expect(text.split("\n")).toEqual([
      "cpu-1 (cpu)  failed",
      "  mirror:gguf/q4.gguf from https://mirror/models/gguf/q4.gguf  failed: could not fetch https://mirror/models/gguf/q4.gguf on node cpu-1: the server answered 404 (not found)",
      "cpu-2 (cpu)  failed: could not reach the agent of node cpu-2",
      "gpu-1  not pulled: cannot run qwen (cpu: has no llamacpp installed)",
    ]);
  });

  it("says a simulated agent pretended its weights rather than claim a download", () => {
    const pretended = source({ state: "cached", size_bytes: 0, simulated: true });
    expect(describePullResult(pull([node({ state: "cached", sources: [pretended] })]))).toContain("simulated: a simulated agent pretends its weights, nothing was fetched");
  });
});

describe("pullFinished", () => {
  it("is true once no node is still fetching", () => {
    expect(pullFinished({ model: "m", nodes: [node({ state: "cached" }), node({ state: "failed" })], skipped: [] })).toBe(true);
    expect(pullFinished({ model: "m", nodes: [node({ state: "cached" }), node({ state: "fetching" })], skipped: [] })).toBe(false);
  });
});
