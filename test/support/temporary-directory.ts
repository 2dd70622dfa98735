import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

const temporaryDirectories: string[] = [];

/** A fresh folder under the system's temp dir, removed after the test file by test/support/remove-temporary-directories.ts. */
export function temporaryDirectory(prefix = "llmgw-test-"): string {
  const directory = mkdtempSync(path.join(tmpdir(), prefix));
  temporaryDirectories.push(directory);
  return directory;
}

export function removeTemporaryDirectories(): void {
  for (const directory of temporaryDirectories.splice(0)) rmSync(directory, { recursive: true, force: true });
}
