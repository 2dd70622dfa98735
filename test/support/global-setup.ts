import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

/**
 * Runs once around the whole test run (vitest globalSetup), in the main process.
 *
 * - Says at the start when the Postgres half of the store's contract suites is
 *   off: without it a run reports "N skipped" and reads as all green while
 *   half of every contract went untested.
 * - Points TMPDIR (which os.tmpdir() and every spawned llmgw read) at one
 *   folder for this run, and fails the run when a test left anything in it:
 *   a test that forgets its temp folder would otherwise fill /tmp a few
 *   hundred folders per run, unseen.
 */
/** Made by Node itself (22 and newer keep their module compile cache in the temp dir), not by a test. */
const nodesOwnCaches = ["node-compile-cache"];

/** Set by the first setup of a run: vitest calls a root globalSetup once per project (unit, integration, e2e), in one process. */
const runDirectoryVariable = "LLMGW_TEST_RUN_DIRECTORY";

export default function setup(): () => void {
  // Only the first project's setup makes the folder and checks it at the end; a second one made
  // inside the first would read as a leftover of the first and fail a clean run.
  if (process.env[runDirectoryVariable] !== undefined) return () => undefined;
  if (!process.env.LLMGW_TEST_POSTGRES_URL) {
    process.stdout.write(
      [
        "",
        "  Postgres contract suites: OFF (LLMGW_TEST_POSTGRES_URL is not set); the store is tested on SQLite only.",
        "  To run them too, point it at a Postgres role that may create databases, e.g.:",
        "    export LLMGW_TEST_POSTGRES_URL=postgres://llmgw:llmgw@127.0.0.1:5432/postgres",
        "  (.ci/run starts Postgres and sets it.)",
        "",
        "",
      ].join("\n"),
    );
  }
  const runDirectory = mkdtempSync(path.join(tmpdir(), "llmgw-test-run-"));
  process.env.TMPDIR = runDirectory;
  process.env[runDirectoryVariable] = runDirectory;
  return () => {
    delete process.env[runDirectoryVariable];
    const leftovers = readdirSync(runDirectory).filter((entry) => !nodesOwnCaches.includes(entry));
    rmSync(runDirectory, { recursive: true, force: true });
    if (leftovers.length > 0) {
      // vitest reports an error thrown here but still exits 0; the exit code is what CI reads.
      process.exitCode = 1;
      throw new Error(
        `tests left ${leftovers.length} entr${leftovers.length === 1 ? "y" : "ies"} in the temp dir (removed now): ${leftovers.slice(0, 20).join(", ")}${leftovers.length > 20 ? ", …" : ""}. The test that makes a folder removes it (afterAll / afterEach).`,
      );
    }
  };
}
