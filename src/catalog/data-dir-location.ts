import { existsSync } from "node:fs";
import path from "node:path";
import { DomainError } from "../errors/light.js";
import { defaultDataDir } from "./server-defaults.js";

/** What marks a folder as an llmgw server's data directory: its SQLite file or its admin token. */
const stateFiles = ["llmgw.db", "admin-token"];

function holdsState(folder: string): boolean {
  return stateFiles.some((name) => existsSync(path.join(folder, name)));
}

/**
 * Where the server keeps its state. One rule for every path: a relative path
 * written in server.yaml is read from the file's folder (as `tls` and
 * `nodes.ca` always were), so the server finds the same folder from any
 * working directory; a path on the command line (--data-dir) and the default
 * are read from the working directory, as every command-line path is.
 *
 * Earlier releases read server.yaml's `data_dir` from the working directory.
 * Where that reading finds a data directory and the file's folder has none,
 * the server refuses to start rather than open an empty one beside the file
 * and leave the fleet's state behind: the operator says which it is.
 */
export function dataDirLocation(options: { readonly flag: string | undefined; readonly fromFile: string | undefined; readonly configPath: string | undefined; readonly label: string; readonly cwd?: string }): string {
  const cwd = options.cwd ?? process.cwd();
  if (options.flag !== undefined) return path.resolve(cwd, options.flag);
  if (options.fromFile === undefined) return path.resolve(cwd, defaultDataDir);
  if (options.configPath === undefined || path.isAbsolute(options.fromFile)) return path.resolve(cwd, options.fromFile);
  const besideFile = path.resolve(path.dirname(path.resolve(cwd, options.configPath)), options.fromFile);
  const asBefore = path.resolve(cwd, options.fromFile);
  if (asBefore !== besideFile && !holdsState(besideFile) && holdsState(asBefore)) {
    throw new DomainError(
      "config_invalid",
      `${options.label}: data_dir ${options.fromFile} is read from the file's folder, ${besideFile}, which holds no llmgw state; earlier releases read it from the working directory, ${asBefore}, which does`,
      `Keep that state: set data_dir: ${asBefore} in ${options.label} (or start with --data-dir ${asBefore}), or move that folder to ${besideFile}.`,
    );
  }
  return besideFile;
}
