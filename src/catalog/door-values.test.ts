import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { refusalOf } from "../../test/support/refusal.js";
import { parseWithSchema } from "./schema-errors.js";
import { modelEntrySchema, scalingSchema } from "./schema.js";
import { loadServerConfig } from "./server-config.js";

const refusal = (value: unknown) => refusalOf(() => parseWithSchema(modelEntrySchema, value, { label: "request body" }));

const withProfile = (profile: Record<string, unknown>) => ({ name: "m", profiles: [{ engine: "vllm", source: "x", ...profile }] });

describe("values that can never work are refused at the door, naming the path and the bound", () => {
  it("refuses NUL in an env name, an env value and an argument", () => {
    expect(refusal(withProfile({ env: { "HF\u0000TOKEN": "x" } })).message).toContain("profiles[0].env.HF\\u0000TOKEN: an environment variable name of letters, digits and _");
    expect(refusal(withProfile({ env: { HF_TOKEN: "a\u0000b" } })).message).toContain(
      "profiles[0].env.HF_TOKEN: an environment value cannot hold NUL or control characters other than tab and newline",
    );
    expect(refusal(withProfile({ args: ["--ok", "--bad\u0000"] })).message).toContain("profiles[0].args[1]: an argument cannot hold NUL");
  });

  it("refuses env names no process environment can hold, and control characters in one-line values", () => {
    expect(refusal(withProfile({ env: { "A=B": "x" } })).message).toContain("profiles[0].env.A=B: an environment variable name");
    expect(refusal(withProfile({ env: { "": "x" } })).code).toBe("invalid_input");
    expect(refusal(withProfile({ source: "https://mirror/m/\n" })).message).toContain("profiles[0].source: where the weights come from");
    expect(refusal({ name: "m", owner: "team\u001b[31m", profiles: [{ engine: "vllm", source: "x" }] }).message).toContain("owner: an owner name (a team or a person); without control characters");
  });

  it("keeps tab and newline where a setting may need them (a PEM certificate in env)", () => {
    const entry = parseWithSchema(modelEntrySchema, withProfile({ env: { CA_PEM: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n" }, args: ["--json", "{\n\t\"a\": 1\n}"] }), { label: "request body" });
    expect(entry.profiles?.[0]?.env?.["CA_PEM"]).toContain("\nMIIB\n");
  });

  it("refuses more cards than any machine holds, stating 64", () => {
    expect(refusal(withProfile({ gpus: 65 })).message).toContain("profiles[0].gpus: a whole number of cards, 0 to 64 (these are cards per node, and no machine has more)");
    expect(parseWithSchema(modelEntrySchema, withProfile({ gpus: 64 }), { label: "request body" }).profiles?.[0]?.gpus).toBe(64);
  });

  it("refuses contexts, memory and cores past any model or machine", () => {
    expect(refusal({ name: "m", context: 2 ** 30, profiles: [{ engine: "vllm", source: "x" }] }).message).toContain("context: a whole number of tokens one request may use, 1 to 16777216");
    expect(refusal(withProfile({ memory_gb: 1e9 })).message).toContain("profiles[0].memory_gb: host memory in GB: a number greater than 0 and at most 65536");
    expect(refusal(withProfile({ cpu_cores: Number.MAX_SAFE_INTEGER })).message).toContain("profiles[0].cpu_cores: CPU cores: a number greater than 0 and at most 4096");
  });

  it("refuses an idle timeout of zero or beyond reason, stating the range", () => {
    for (const idle of ["0s", "31d", "99999999d"]) {
      expect(refusal({ name: "m", scaling: { min: 0, idle_timeout: idle }, profiles: [{ engine: "vllm", source: "x" }] }).message, idle).toContain(
        "scaling.idle_timeout: a duration between 1s and 30d",
      );
    }
    expect(parseWithSchema(scalingSchema, { idle_timeout: "30d" }, { label: "request body" }).idle_timeout).toBe("30d");
  });
});

describe("server.yaml durations", () => {
  const directory = mkdtempSync(path.join(tmpdir(), "llmgw-door-"));
  afterAll(() => rmSync(directory, { recursive: true, force: true }));
  const load = (nodes: string) => {
    const file = path.join(directory, "server.yaml");
    writeFileSync(file, `nodes:\n${nodes}\n`);
    return loadServerConfig(file);
  };
  const refused = (nodes: string) => refusalOf(() => load(nodes));

  it("refuses a heartbeat deadline of zero, under two beats, or over an hour, stating the range", () => {
    for (const deadline of ["0s", "2s", "2h"]) {
      const error = refused(`  heartbeat_deadline: ${deadline}`);
      expect(error.code).toBe("invalid_input");
      expect(error.message).toContain("server.yaml:2:23: nodes.heartbeat_deadline: a duration between 4s and 1h");
    }
    expect(load("  heartbeat_deadline: 4s").heartbeatDeadlineMs).toBe(4000);
  });

  it("refuses a settling window over an hour and accepts none at all", () => {
    expect(refused("  settling_window: 2h").message).toContain("nodes.settling_window: a duration between 0s and 1h");
    expect(load("  settling_window: 0s").settlingWindowMs).toBe(0);
  });
});
