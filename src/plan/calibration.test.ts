import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bf16Tolerance, calibrationRows, calibrationTable, ggufTolerance } from "./calibration.js";
import { kvBytesPerToken } from "./kv-cache.js";
import { readModelSource } from "./read-model-source.js";
import { checkpointTensors, writeSyntheticCheckpoint } from "./header-only-checkpoint.js";
import { fixtureArchitecture, fixtureConfig } from "./testing/fixtures.js";
import { weightsBytes } from "./weights.js";

let workspace: string;
beforeAll(async () => {
  workspace = await mkdtemp(join(tmpdir(), "llmgw-calibration-"));
});
afterAll(async () => {
  await rm(workspace, { recursive: true, force: true });
});

describe.each(calibrationTable)("calibration: $fixture", (entry) => {
  it("reads the published parameter count from a header-only checkpoint of the fixture's shapes", async () => {
    const folder = join(workspace, entry.fixture);
    const tensors = checkpointTensors(fixtureArchitecture(entry.fixture));
    // Shard like the real checkpoints (about 5 GB each) so the index path is the one exercised.
    const shards = Math.max(1, Math.round(entry.bf16Bytes / 5e9));
    await writeSyntheticCheckpoint(folder, fixtureConfig(entry.fixture), tensors, shards);
    const facts = await readModelSource(folder);
    expect(facts.parameters).toBe(entry.publishedParameters);
    const predicted = weightsBytes(facts.architecture, facts.parameters, "bf16");
    expect(Math.abs(predicted - entry.bf16Bytes) / entry.bf16Bytes).toBeLessThanOrEqual(bf16Tolerance);
  });

  it("predicts the published GGUF file sizes within 5%", () => {
    const architecture = fixtureArchitecture(entry.fixture);
    for (const [quantization, published] of Object.entries(entry.gguf)) {
      const predicted = weightsBytes(architecture, entry.publishedParameters, quantization as "Q8_0");
      expect(Math.abs(predicted - published.bytes) / published.bytes, `${quantization} from ${published.repository}`).toBeLessThanOrEqual(ggufTolerance);
    }
  });

  it("gives the architecture's exact KV cache bytes per token", () => {
    expect(kvBytesPerToken(fixtureArchitecture(entry.fixture))).toBe(entry.kvBytesPerToken);
  });
});

describe("calibrationRows", () => {
  it("reports every row within its tolerance", () => {
    const rows = calibrationRows(fixtureArchitecture);
    expect(rows.length).toBeGreaterThan(30);
    for (const row of rows) expect(Math.abs(row.error), `${row.fixture} ${row.quantity}`).toBeLessThanOrEqual(row.tolerance);
  });
});
