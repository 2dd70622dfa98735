import { copyFile, open, rename, rm, stat, truncate } from "node:fs/promises";

/**
 * An engine writes its stdout and stderr straight into its log file (opened
 * O_APPEND), never into a pipe to the agent: a pipe would break, and with it
 * the engine, when the agent restarts. The agent therefore cannot rotate by
 * reopening; it rotates by copy-and-truncate (as logrotate's copytruncate):
 * the engine's next append lands at the start of the emptied file. Lines
 * written between the copy and the truncate are lost; at most a few, against
 * a disk filled by a chatty engine running for weeks.
 */
export interface LogRotation {
  readonly maxBytes: number;
  /** Rotated files kept beside the live one: REPLICA.log.1 (newest) .. REPLICA.log.N. */
  readonly keep: number;
}

export const defaultLogRotation: LogRotation = { maxBytes: 10 * 1024 * 1024, keep: 3 };

export async function rotateLogIfLarge(logPath: string, rotation: LogRotation): Promise<boolean> {
  let size: number;
  try {
    size = (await stat(logPath)).size;
  } catch {
    return false;
  }
  if (size <= rotation.maxBytes) return false;
  await rm(`${logPath}.${rotation.keep}`, { force: true });
  for (let generation = rotation.keep - 1; generation >= 1; generation -= 1) {
    await rename(`${logPath}.${generation}`, `${logPath}.${generation + 1}`).catch(() => undefined);
  }
  if (rotation.keep >= 1) await copyFile(logPath, `${logPath}.1`);
  await truncate(logPath, 0);
  return true;
}

/** How much of a log is read to find its last lines; engines' load errors fit well inside. */
const tailWindowBytes = 256 * 1024;

async function readEnd(file: string, bytes: number): Promise<string> {
  let handle;
  try {
    handle = await open(file, "r");
  } catch {
    return "";
  }
  try {
    const size = (await handle.stat()).size;
    const length = Math.min(size, bytes);
    const buffer = Buffer.alloc(length);
    await handle.read(buffer, 0, length, size - length);
    return buffer.toString("utf8");
  } finally {
    await handle.close();
  }
}

/** The last `lines` lines of a replica's log, reaching into the newest rotated file when the live one is short. */
export async function readLogTail(logPath: string, lines: number): Promise<string[]> {
  if (lines <= 0) return [];
  const split = (text: string) => {
    const all = text.split(/\r?\n/);
    if (all.at(-1) === "") all.pop();
    return all;
  };
  const live = split(await readEnd(logPath, tailWindowBytes));
  if (live.length >= lines) return live.slice(-lines);
  const previous = split(await readEnd(`${logPath}.1`, tailWindowBytes));
  return [...previous, ...live].slice(-lines);
}
