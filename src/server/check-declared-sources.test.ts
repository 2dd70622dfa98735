import { writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { temporaryDirectory } from "../../test/support/temporary-directory.js";
import { checkpointTensors, writeSyntheticCheckpoint } from "../plan/header-only-checkpoint.js";
import { fixtureArchitecture, fixtureConfig } from "../plan/testing/fixtures.js";
import { startHubServer, type HubServer } from "../hub/local-hub.js";
import { startServer } from "./start-server.js";

describe("the sources of the models declared in server.yaml", () => {
  let directory: string;
  let hub: HubServer;

  beforeAll(async () => {
    directory = temporaryDirectory("llmgw-declared-sources-");
    await writeSyntheticCheckpoint(path.join(directory, "mirror", "qwen"), fixtureConfig("Qwen2.5-7B-Instruct"), checkpointTensors(fixtureArchitecture("Qwen2.5-7B-Instruct")), 2);
    hub = await startHubServer({ repositories: {}, mirrorRoot: path.join(directory, "mirror") });
  });
  afterAll(async () => {
    await hub?.close();
  });

  it("are read after the server starts: a typo is a warning naming the entry and the source, and the server serves anyway", async () => {
    writeFileSync(
      path.join(directory, "server.yaml"),
      [
        `mirror: ${hub.url}/mirror/`,
        "models:",
        "  - name: good",
        "    profiles: [{ engine: vllm, source: mirror:qwen/, gpus: 1 }]",
        "  - name: typo",
        "    profiles: [{ engine: vllm, source: mirror:qwne/, gpus: 1 }]",
        "",
      ].join("\n"),
    );
    const server = await startServer({ configPath: path.join(directory, "server.yaml"), dataDir: path.join(directory, "data"), listen: "127.0.0.1:0", logger: false });
    try {
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
      const warnings = await server.declaredSourcesChecked;
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatch(/^WARNING: server\.yaml models\[1\] \(typo\): typo: a source does not answer as a model: typo\.profiles\[0\]\.source\n  - typo\.profiles\[0\]\.source: .*qwne\/.*not found/);
      expect(warnings[0]).toContain("The server runs anyway");
      const models = (await (await fetch(`${server.url}/api/v1/models`, { headers: { authorization: `Bearer ${server.createdAdminToken?.token}` } })).json()) as { models: { name: string }[] };
      expect(models.models.map((model) => model.name)).toEqual(["good", "typo"]);
    } finally {
      await server.close();
    }
  });
});
