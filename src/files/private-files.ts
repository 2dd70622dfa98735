import { randomBytes } from "node:crypto";
import { mkdirSync, statSync } from "node:fs";
import { mkdir, rename, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { quoteForShell } from "./quote-for-shell.js";

/**
 * Files that hold secrets or what leads to them (the database, the admin
 * token, the server key, the agent's state, a replica's spec with its
 * environment) are created readable by their owner only, in a directory only
 * the owner may enter: a 0644 database on a shared machine handed every
 * local user the node credentials.
 */
export const privateFileMode = 0o600;
export const privateDirectoryMode = 0o700;

function octal(mode: number): string {
  return (mode & 0o777).toString(8).padStart(4, "0");
}

/**
 * Creates the directory 0700 when it is missing. An existing one is left as
 * the operator made it (it may be shared on purpose, or hold other things),
 * but when others may read or enter it the answer says so, with the command
 * that closes it, for the caller to print at start.
 */
export function ensurePrivateDirectory(directory: string): string | undefined {
  let mode: number;
  try {
    mode = statSync(directory).mode;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    mkdirSync(directory, { recursive: true, mode: privateDirectoryMode });
    return undefined;
  }
  if ((mode & 0o077) === 0) return undefined;
  return `${directory} is open to other users of this machine (mode ${octal(mode)}), and it holds secrets; close it with: chmod 700 ${quoteForShell(directory)}`;
}

/** The same warning for an existing secret file made more open than 0600 (by hand, or by an older release). */
export function privateFileWarning(file: string): string | undefined {
  let mode: number;
  try {
    mode = statSync(file).mode;
  } catch {
    return undefined;
  }
  if ((mode & 0o077) === 0) return undefined;
  return `${file} is readable by other users of this machine (mode ${octal(mode)}), and it holds a secret; close it with: chmod 600 ${quoteForShell(file)}`;
}

/**
 * Replaces a file all at once (a temporary file renamed over it, which POSIX
 * makes all-or-nothing), created 0600: a writer killed midway leaves the old
 * file, never half of one.
 */
export async function writePrivateFile(file: string, text: string): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true, mode: privateDirectoryMode });
  const temporary = `${file}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
  try {
    await writeFile(temporary, text, { mode: privateFileMode });
    await rename(temporary, file);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}
