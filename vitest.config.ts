import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    // End-to-end tests start real server and agent processes; on a shared
    // two-core machine they need room, not a race against a tight clock.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Says when the Postgres suites are off, and fails a run that leaves temp folders behind.
    globalSetup: ["test/support/global-setup.ts"],
    setupFiles: ["test/support/remove-temporary-directories.ts"],
  },
});
