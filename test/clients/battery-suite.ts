import { afterAll, beforeAll, describe, it } from "vitest";
import { runRow, type BatteryRow, type BatteryTarget } from "./battery.js";
import { startBatteryServer, type BatteryEngine, type BatteryServer } from "./battery-server.js";
import { aiSdkRows } from "./rows-ai-sdk.js";
import { anthropicRows } from "./rows-anthropic.js";
import { langchainRows } from "./rows-langchain.js";
import { openai6Rows, openai7Rows } from "./rows-openai.js";

/** Every row of the battery, client by client. */
export const batteryRows: readonly BatteryRow[] = [...openai6Rows, ...openai7Rows, ...aiSdkRows, ...langchainRows, ...anthropicRows];

/**
 * The battery against one engine: a real server with it, then each row as a
 * test, its outcome kept in the test's meta for the table reporter
 * (test/clients/table-reporter.ts).
 */
export function describeBattery(engine: BatteryEngine, startWithinMs: number): void {
  describe(`the official clients against the ${engine === "sim" ? "simulated engine" : "built-in llama.cpp engine"}, through the gateway`, () => {
    let server: BatteryServer | undefined;
    let target: BatteryTarget;

    beforeAll(async () => {
      server = await startBatteryServer(engine);
      target = server;
    }, startWithinMs);

    afterAll(async () => {
      await server?.stop();
    }, 30_000);

    for (const row of batteryRows) {
      it(`${row.client}: ${row.feature}`, async ({ task }) => {
        task.meta.battery = { client: row.client, feature: row.feature, engine };
        const outcome = await runRow(row, target);
        task.meta.battery.outcome = outcome.kind === "pass" ? "pass" : `refused (${outcome.param})`;
      });
    }
  });
}
