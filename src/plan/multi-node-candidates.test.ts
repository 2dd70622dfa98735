import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseHardwareSpec } from "../fleet/hardware-spec.js";
import { fleetFromHardwareSpec } from "../fleet/pools.js";
import { planCandidates, type PlanCandidate } from "./candidates.js";
import { renderPlanTable } from "./render-plan-table.js";
import { fixtureFacts, storedFixtureFacts } from "./testing/fixtures.js";

const fleet = (spec: string) => fleetFromHardwareSpec(parseHardwareSpec(spec));
const deepSeekV3 = storedFixtureFacts("DeepSeek-V3", "fp8", 688_586_727_753);
const find = (candidates: readonly PlanCandidate[], engine: string, nodes: number, gpus: number) =>
  candidates.find((candidate) => candidate.engine === engine && candidate.nodes === nodes && candidate.gpus === gpus);

describe("replicas over several nodes", () => {
  it("lists two-node candidates for DeepSeek-V3 on two 8×H100 nodes of one fabric, vLLM as tp8 × pp2 and SGLang as tp16", () => {
    const plan = planCandidates(deepSeekV3, fleet("2x8xH100-80GB@ib0"));
    const vllm = find(plan.candidates, "vllm", 2, 8);
    const sglang = find(plan.candidates, "sglang", 2, 8);
    expect(vllm).toMatchObject({ fits: true, parallel: { tensor: 8, pipeline: 2 }, pool: { fabric: "ib0" } });
    expect(sglang).toMatchObject({ fits: true, parallel: { tensor: 16, pipeline: 1 } });
    // The best candidate is the two-node one: no single node of 8×80 GB holds 688 GB.
    expect(plan.candidates[0]).toMatchObject({ fits: true, nodes: 2, engine: "vllm" });
    expect(plan.candidates.filter((candidate) => candidate.nodes === 1).every((candidate) => !candidate.fits)).toBe(true);
    // Each card of the vLLM layout holds the first stage's 31 of 61 layers, an eighth of each.
    expect(vllm?.weights_bytes_per_card).toBeGreaterThan((688_586_727_753 * 30) / 61 / 8);
    expect(vllm?.weights_bytes_per_card).toBeLessThan((688_586_727_753 * 32) / 61 / 8);
    expect(renderPlanTable(plan)).toMatch(/yes +h100-80G@ib0 16\/16 free +vllm +fp8 +2×8 tp8 pp2/);
  });

  it("says what one node of 8×H100 is short of for DeepSeek-V3, with no multi-node candidate made from one node", () => {
    const plan = planCandidates(deepSeekV3, fleet("8xH100-80GB@ib0"));
    expect(plan.candidates.every((candidate) => !candidate.fits && candidate.nodes === 1)).toBe(true);
    expect(find(plan.candidates, "vllm", 1, 8)?.short?.[0]).toMatch(/^each card needs 8\d\.\d GiB for weights and \d\.\d GiB runtime overhead, has 72\.0 GiB usable \(0\.90 of 80\.0 GiB\): \d+\.\d GiB short before any KV cache$/);
  });

  it("fits DeepSeek-V3 on one node of 8×H200, and then offers no split over the network", () => {
    const plan = planCandidates(deepSeekV3, fleet("2x8xH200@ib0"));
    expect(find(plan.candidates, "vllm", 1, 8)?.fits).toBe(true);
    expect(plan.candidates.some((candidate) => candidate.nodes > 1)).toBe(false);
  });

  it("splits over nodes a model one node holds only when nodes are asked for", () => {
    const facts = fixtureFacts("Llama-3.3-70B-Instruct");
    expect(planCandidates(facts, fleet("2x8xH100-80GB@ib0")).candidates.some((candidate) => candidate.nodes > 1)).toBe(false);
    const asked = planCandidates(facts, fleet("2x8xH100-80GB@ib0"), { nodes: 2 });
    expect(asked.candidates.length).toBeGreaterThan(0);
    expect(asked.candidates.every((candidate) => candidate.nodes === 2)).toBe(true);
    expect(find(asked.candidates, "vllm", 2, 4)?.fits).toBe(true);
  });

  it("takes the fewest nodes that hold the model: DeepSeek-V3 on 8-card nodes needs two of the four", () => {
    const plan = planCandidates(deepSeekV3, fleet("4x8xH100-80GB@ib0"));
    expect(find(plan.candidates, "vllm", 2, 8)?.fits).toBe(true);
    expect(find(plan.candidates, "vllm", 3, 8)).toBeUndefined();
    // Four cards a node needs more nodes: three stages of 21, 20 and 20 layers.
    expect(find(plan.candidates, "vllm", 3, 4)).toMatchObject({ fits: true, parallel: { tensor: 4, pipeline: 3 } });
  });

  it("keeps Llama-3.1-405B on one node of 8×H100, since FP8 holds it there, unless two nodes are asked for", () => {
    const facts = fixtureFacts("Llama-3.1-405B");
    const plan = planCandidates(facts, fleet("2x8xH100-80GB@ib0"));
    expect(plan.candidates.find((candidate) => candidate.engine === "vllm" && candidate.quantization === "fp8" && candidate.gpus === 8)).toMatchObject({ fits: true, nodes: 1 });
    expect(plan.candidates.some((candidate) => candidate.nodes > 1)).toBe(false);
    const asked = planCandidates(facts, fleet("2x8xH100-80GB@ib0"), { nodes: 2 });
    expect(asked.candidates.find((candidate) => candidate.engine === "vllm" && candidate.gpus === 8 && candidate.quantization === "bf16")).toMatchObject({ fits: true, nodes: 2 });
  });

  it("applies the heads rule to the whole tensor-parallel group: SGLang over 2×8 cards needs the heads to divide by 16", () => {
    const plan = planCandidates(fixtureFacts("Qwen2.5-14B-Instruct"), fleet("2x8xH100-80GB@ib0"), { nodes: 2 });
    expect(find(plan.candidates, "sglang", 2, 8)?.short).toContain("tensor parallel: 16 cards do not divide the 40 attention heads");
    // vLLM splits each node's 8 cards only: 40 heads divide by 8.
    expect(find(plan.candidates, "vllm", 2, 8)?.short ?? []).not.toContainEqual(expect.stringMatching(/^tensor parallel/));
  });

  it("says when the pool has fewer nodes than asked, and when their cards are not free", () => {
    const plan = planCandidates(deepSeekV3, fleet("2x8xH100-80GB@ib0"), { nodes: 3 });
    expect(find(plan.candidates, "vllm", 3, 8)?.short?.[0]).toBe("the pool has 2 nodes with 8 cards on ib0, 3 needed");
  });

  it("never joins nodes of two fabrics into one replica", () => {
    const plan = planCandidates(deepSeekV3, fleet("8xH100-80GB@ib0,8xH100-80GB@ib1"));
    expect(plan.candidates.some((candidate) => candidate.nodes > 1)).toBe(false);
  });

  it("refuses more pipeline stages than the model has layers", () => {
    const facts = fixtureFacts("Llama-3.1-8B");
    const tiny = { ...facts, architecture: { ...facts.architecture, layers: 2 } };
    const plan = planCandidates(tiny, fleet("3x1xH100-80GB@ib0"), { nodes: 3 });
    expect(find(plan.candidates, "vllm", 3, 1)?.short).toContain("pipeline parallel: 3 pipeline stages need at least 3 layers, the model has 2");
  });

  it("property: a candidate never uses more nodes or cards than one fabric's pool has", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 4 }), fc.constantFrom(1, 2, 4, 8), fc.integer({ min: 1, max: 4 }), (nodes, cards, asked) => {
        const plan = planCandidates(deepSeekV3, fleet(`${nodes}x${cards}xH100-80GB@ib0,${cards}xH100-80GB@other`), { nodes: asked });
        for (const candidate of plan.candidates) {
          if (candidate.nodes > 1 && candidate.fits) {
            expect(candidate.pool.fabric).toBe("ib0");
            expect(candidate.nodes).toBeLessThanOrEqual(nodes);
            expect(candidate.gpus).toBeLessThanOrEqual(cards);
          }
        }
      }),
      { numRuns: 40 },
    );
  });
});
