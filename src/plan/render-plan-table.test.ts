import { describe, expect, it } from "vitest";
import { parseHardwareSpec } from "../fleet/hardware-spec.js";
import { fleetFromHardwareSpec } from "../fleet/pools.js";
import { planCandidates } from "./candidates.js";
import { formatContext, formatGiB } from "./format.js";
import { renderPlanTable } from "./render-plan-table.js";
import { fixtureFacts } from "./testing/fixtures.js";

describe("formatting", () => {
  it("writes GiB with one decimal and contexts as 32k/128k", () => {
    expect(formatGiB(41.23 * 1024 ** 3)).toBe("41.2 GiB");
    expect(formatContext(131072)).toBe("128k");
    expect(formatContext(32768)).toBe("32k");
    expect(formatContext(18500)).toBe("18k");
    expect(formatContext(512)).toBe("512");
  });
});

describe("renderPlanTable", () => {
  const plan = planCandidates(fixtureFacts("Llama-3.3-70B-Instruct"), fleetFromHardwareSpec(parseHardwareSpec("2xH100-80GB@nvl0,cpu:32c/256g")), {
    context: 16384,
  });
  const table = renderPlanTable(plan, { maxRows: 10 });

  it("opens with the model's architecture", () => {
    expect(table.split("\n")[0]).toBe("Llama-3.3-70B-Instruct: llama, 70.55B parameters");
    expect(table).toContain("80 layers, 64 attention heads, 8 KV heads × 128, trained context 128k");
  });

  it("has one aligned row per candidate, best first, and says how many are left out", () => {
    const lines = table.split("\n");
    const header = lines.findIndex((line) => line.startsWith("FIT"));
    expect(lines[header + 1]).toMatch(/^yes\s+h100-80G@nvl0 2\/2 free/);
    expect(lines.at(-2)).toMatch(/^… \d+ more candidates \(--json lists all\)$/);
    // A 16-bit source: the GGUF and int4 rows are marked and the mark explained.
    expect(lines.at(-1)).toMatch(/^\* needs the model in that format first/);
    expect(lines.some((line) => /\sQ4_K_M\*\s/.test(line))).toBe(true);
    const columnOfEngine = lines[header]!.indexOf("ENGINE");
    expect(lines.slice(header + 1, header + 11).every((line) => /^(vllm|llamacpp)/.test(line.slice(columnOfEngine)))).toBe(true);
  });

  it("shows the first reason a miss is short", () => {
    const all = renderPlanTable(plan, { maxRows: 1000 });
    expect(all).toMatch(/no\s+h100.*each card needs .* GiB for weights/);
  });
});
