import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

/**
 * Three speeds (`npm run test:unit` runs the first alone, `npm test` all):
 * - unit: the pure layer and in-process servers beside their code in src/,
 *   the benchmarks' verdicts beside theirs in bench/, plus the architecture
 *   rules; seconds, the loop after every change;
 * - integration: test/integration, which start agents, engines and
 *   `llmgw` child processes;
 * - e2e: test/e2e, the CLI against a real server;
 * - clients: test/clients, the official client libraries against a real server
 *   (its llama.cpp half, clients-llama, only in `npm run test:clients`);
 * - browser: test/browser, the web console in headless Chromium against `llmgw demo`.
 */
export default defineConfig({
  test: {
    // Tests that start real processes on a shared two-core machine need room, not a race against a tight clock.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Vitest's default is one worker per core less one: a single worker on a
    // two-core CI machine, where the integration and e2e files spend most of
    // their time waiting on the processes they start. Three files at once keep
    // both cores busy there (the whole run in about half the time); more cores
    // get more, up to six, past which the files' own processes crowd each other.
    maxWorkers: Math.min(6, Math.max(3, availableParallelism())),
    // Says when the Postgres suites are off, and fails a run that leaves temp folders behind.
    globalSetup: ["test/support/global-setup.ts"],
    setupFiles: ["test/support/remove-temporary-directories.ts"],
    projects: [
      // Threads start faster than forks; nothing in the unit project changes process-wide state.
      { extends: true, test: { name: "unit", include: ["src/**/*.test.ts", "console/src/**/*.test.ts", "bench/**/*.test.ts", "test/architecture/**/*.test.ts"], pool: "threads" } },
      { extends: true, test: { name: "integration", include: ["test/integration/**/*.test.ts"] } },
      { extends: true, test: { name: "e2e", include: ["test/e2e/**/*.test.ts"] } },
      // The official clients (openai, the AI SDK, LangChain, Anthropic's SDK) unchanged against a real server
      // with the simulated engine: in every run, about 40 s.
      { extends: true, test: { name: "clients", include: ["test/clients/**/*.test.ts"], exclude: ["test/clients/llama.test.ts"] } },
      // `npm run test:clients`: the same clients against the built-in llama.cpp engine on a tiny GGUF, real
      // inference on the CPU, over a minute; kept out of `npm test` and run by CI.
      ...(process.env.LLMGW_CLIENTS_LLAMA === "1" ? [{ extends: true as const, test: { name: "clients-llama", include: ["test/clients/llama.test.ts"] } }] : []),
      // The web console in Debian's headless Chromium against a real `llmgw demo`.
      { extends: true, test: { name: "browser", include: ["test/browser/**/*.test.ts"] } },
      // The chaos suite's quick part, in every run: fuzzed files, in process, in seconds.
      { extends: true, test: { name: "chaos-fast", include: ["test/chaos/fast/**/*.test.ts"] } },
      // `npm run chaos`: faults against real processes under load, minutes long; kept out of `npm test`.
      // The packed tarball installed globally into a fresh prefix (.ci/run, after npm test): minutes of npm install, kept out of `npm test`.
      ...(process.env.LLMGW_PACKAGE_TEST === "1" ? [{ extends: true as const, test: { name: "package", include: ["test/package/**/*.test.ts"], testTimeout: 300_000, hookTimeout: 1_200_000 } }] : []),
      // `.ci/image`: the OCI image deploy/image/build.sh made (LLMGW_IMAGE_ARCHIVE); minutes to build, so kept out of `npm test`.
      ...(process.env.LLMGW_IMAGE_ARCHIVE ? [{ extends: true as const, test: { name: "image", include: ["test/image/**/*.test.ts"] } }] : []),
      ...(process.env.LLMGW_CHAOS === "1" ? [{ extends: true as const, test: { name: "chaos", include: ["test/chaos/**/*.test.ts"], fileParallelism: false } }] : []),
    ],
  },
});
