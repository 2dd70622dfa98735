import path from "node:path";
import { defaultDataDir } from "../catalog/light.js";
import { shellWord } from "./shell-word.js";

/**
 * Where the first admin token is kept, and how ctl finds it: apart from the
 * token's creation (which needs the store), so that every ctl start can read
 * these without loading the database code.
 */
export const adminTokenFileName = "admin-token";

/** The ctl option that finds this data dir's admin token from `workingDirectory`: none when ctl's default (./llmgw-data) is that dir. */
export function dataDirOption(dataDir: string, workingDirectory: string = process.cwd()): string {
  return path.resolve(workingDirectory, defaultDataDir) === path.resolve(workingDirectory, dataDir) ? "" : ` --data-dir ${shellWord(path.resolve(workingDirectory, dataDir))}`;
}
