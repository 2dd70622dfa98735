import { defineConfig } from "vitest/config";

/**
 * Three speeds (`npm run test:unit` runs the first alone, `npm test` all):
 * - unit: the pure layer and in-process servers beside their code in src/,
 *   plus the architecture rules; seconds, the loop after every change;
 * - integration: test/integration, which start agents, engines and
 *   `llmgw` child processes;
 * - e2e: test/e2e, the CLI against a real server.
 */
export default defineConfig({
  test: {
    // Tests that start real processes on a shared two-core machine need room, not a race against a tight clock.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Says when the Postgres suites are off, and fails a run that leaves temp folders behind.
    globalSetup: ["test/support/global-setup.ts"],
    setupFiles: ["test/support/remove-temporary-directories.ts"],
    projects: [
      // Threads start faster than forks; nothing in the unit project changes process-wide state.
      { extends: true, test: { name: "unit", include: ["src/**/*.test.ts", "test/architecture/**/*.test.ts"], pool: "threads" } },
      { extends: true, test: { name: "integration", include: ["test/integration/**/*.test.ts"] } },
      { extends: true, test: { name: "e2e", include: ["test/e2e/**/*.test.ts"] } },
    ],
  },
});
