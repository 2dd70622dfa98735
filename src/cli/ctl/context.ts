import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import type { Command } from "commander";
import { defaultDataDir, defaultListen } from "../../catalog/light.js";
import { adminTokenFileName } from "../../server/light.js";
import { ApiClient } from "../../client/index.js";

export interface CtlOptions {
  server?: string;
  token?: string;
  dataDir?: string;
  ca?: string;
  json?: boolean;
  dryRun?: boolean;
}

/** The options of a ctl subcommand together with the ones given to `ctl` itself. */
export function ctlOptions(command: Command): CtlOptions {
  return command.optsWithGlobals<CtlOptions>();
}

/**
 * The server and token in force: flags first, then LLMGW_SERVER / LLMGW_TOKEN,
 * then (for the token) the admin-token file the server wrote into its data
 * directory, so ctl on the server's own machine works with no setup.
 */
export function apiClient(options: CtlOptions): ApiClient {
  const server = options.server ?? process.env.LLMGW_SERVER ?? `http://${defaultListen}`;
  const baseUrl = /^https?:\/\//.test(server) ? server : `http://${server}`;
  return new ApiClient(
    baseUrl.replace(/\/+$/, ""),
    options.token ?? process.env.LLMGW_TOKEN ?? tokenFromDataDir(options.dataDir),
    options.dryRun ? { json: options.json === true } : undefined,
    // The CA file is read (and undici loaded to trust it) only when one is named: most commands never pay for either.
    options.ca !== undefined || process.env.LLMGW_CA ? async () => (await import("../../net/index.js")).caFromOption(options.ca) : undefined,
  );
}

function tokenFromDataDir(dataDir: string | undefined): string | undefined {
  const file = path.join(dataDir ?? process.env.LLMGW_DATA_DIR ?? defaultDataDir, adminTokenFileName);
  if (!existsSync(file)) return undefined;
  try {
    return readFileSync(file, "utf8").trim() || undefined;
  } catch {
    return undefined; // unreadable (another user's file): the server's 401 says how to get a token
  }
}

export function registerCtlOptions(ctl: Command): Command {
  return ctl
    .option("--server <url>", `the llmgw server (env LLMGW_SERVER; default http://${defaultListen})`)
    .option("--token <token>", "an admin-API token (env LLMGW_TOKEN; default: DATA_DIR/admin-token when present)")
    .option("--ca <file>", "a PEM CA certificate to trust besides the system's, for a server whose certificate a private CA signed (env LLMGW_CA)")
    .option("--data-dir <dir>", `where to find admin-token on the server's machine (env LLMGW_DATA_DIR; default ${defaultDataDir})`);
}
