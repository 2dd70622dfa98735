import { mkdirSync, openSync, readdirSync, readFileSync, renameSync, unlinkSync, close, fdatasync, write, writeSync } from "node:fs";
import path from "node:path";
import type { UsageSync } from "../../catalog/index.js";
import { DomainError } from "../../errors/light.js";

/** One request's usage as the journal keeps it until the store has it. */
export interface JournalRecord {
  readonly key: string;
  readonly model: string;
  /** The minute the request fell in, `2026-11-30T17:42Z`. */
  readonly minute: string;
  readonly errors: number;
  readonly promptTokens: number;
  readonly completionTokens: number;
}

export interface UsageJournalOptions {
  /**
   * What an answer waits for before its last byte; write unless said.
   * - write: its usage written to the file, not synced: a crash of the process
   *   (kill -9, out of memory) loses none, as the kernel has it; a crash of the
   *   machine (power, kernel) may lose what was not yet on disk. That is the
   *   embedded store's own trade (SQLite's synchronous = NORMAL).
   * - disk: written and synced (fdatasync), so neither loses it. The sync was
   *   most of the journal's cost: on a virtual machine's disk it put tens of
   *   milliseconds on the gateway's p99 at 2,000 requests/s.
   */
  readonly sync?: UsageSync;
  /** A write or sync that failed: the usage is still counted in memory, but would be lost in a crash. */
  readonly onError?: (error: unknown) => void;
  /** Whether a process id is running; a segment whose writer is gone is adopted by whoever finds it. */
  readonly isRunning?: (pid: number) => boolean;
}

interface Group {
  readonly fd: number;
  lines: string[];
  waiting: (() => void)[];
  /** A marker: the segment behind fd was sealed, close it once everything before has been written. */
  readonly close?: true;
}

const segmentName = /^usage-(\d+)-(\d+)-(a?\d+)\.jsonl$/;

/**
 * The usage of answered requests, on disk before each answer's last byte
 * leaves: a request's usage is appended to this process's segment file, and
 * the answer ends once the group it was written in has been written (sync
 * write) or synced (disk). The answers of one turn of the event loop form a
 * group, written in one system call at the end of that turn; with disk, lines
 * that arrive while a sync is under way form the next group, so a busy
 * gateway pays one write and one fdatasync per group, not per request.
 *
 * The store still gets usage in batches (UsageLedger); each batch seals the
 * segment its requests were written to, and the sealed segments are deleted
 * once the store has the batch. A process that dies leaves its segments
 * behind; the next process to look (the server or gateway started again, or a
 * sibling worker of `llmgw gateway --workers N`) adopts them by renaming them
 * to its own name (rename is atomic: one adopter wins), counts them, and
 * writes them with its next batch. A segment's writer is told by the process
 * id and start time in its name, so the directory must belong to processes of
 * one machine.
 *
 * A crash between the store's commit of a batch and the deletion of its
 * segments counts that batch twice: usage is never lost, and in that window of
 * a few milliseconds per batch it may be over-counted.
 */
export class UsageJournal {
  readonly #prefix: string;
  #segment = 0;
  #fd: number;
  #file: string;
  readonly #sealed: string[] = [];
  readonly #queue: Group[] = [];
  #writing = false;
  /** The group whose lines are being written now: later lines wait for the next. */
  #inFlight: Group | undefined;
  #appendedSinceSeal = false;
  #adopted = 0;

  private constructor(
    readonly directory: string,
    private readonly options: UsageJournalOptions,
  ) {
    this.#prefix = `usage-${process.pid}-${Date.now()}-`;
    this.#file = this.#nextFile();
    this.#fd = openSync(this.#file, "a", 0o600);
  }

  /** Opens (making the directory if need be) a fresh segment of this process in `directory`. */
  static open(directory: string, options: UsageJournalOptions = {}): UsageJournal {
    try {
      mkdirSync(directory, { recursive: true, mode: 0o700 });
      return new UsageJournal(directory, options);
    } catch (error) {
      throw new DomainError(
        "config_invalid",
        `cannot keep the usage journal in ${directory}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
        "Give a folder this user can write: the server keeps it in its data directory; `llmgw gateway` takes --usage-journal DIR.",
      );
    }
  }

  /** Appends one request's usage; the promise settles once it is synced (or its write failed, which is reported). */
  append(record: JournalRecord): Promise<void> {
    const line = `${JSON.stringify([record.key, record.model, record.minute, record.errors, record.promptTokens, record.completionTokens])}\n`;
    let group = this.#queue.at(-1);
    this.#appendedSinceSeal = true;
    if (group === undefined || group.close || group.fd !== this.#fd || group === this.#inFlight) {
      group = { fd: this.#fd, lines: [], waiting: [] };
      this.#queue.push(group);
    }
    group.lines.push(line);
    const synced = new Promise<void>((resolve) => (group as Group).waiting.push(resolve));
    if (!this.#writing) {
      this.#writing = true;
      // The rest of this turn's answers join the same group.
      setImmediate(() => this.#drain());
    }
    return synced;
  }

  /**
   * Starts a new segment for what comes next and returns every segment whose
   * records are in the batch being taken now (this one, and any earlier
   * batch's that the store refused). Call it in the same turn as the batch is
   * taken from the ledger, so segments and batch hold the same requests.
   */
  seal(): readonly string[] {
    this.#queue.push({ fd: this.#fd, lines: [], waiting: [], close: true });
    this.#sealed.push(this.#file);
    this.#appendedSinceSeal = false;
    this.#file = this.#nextFile();
    this.#fd = openSync(this.#file, "a", 0o600);
    if (!this.#writing) {
      this.#writing = true;
      setImmediate(() => this.#drain());
    }
    return [...this.#sealed];
  }

  /** The store has the batch these segments held: they go. */
  release(files: readonly string[]): void {
    for (const file of files) {
      const at = this.#sealed.indexOf(file);
      if (at >= 0) this.#sealed.splice(at, 1);
      try {
        unlinkSync(file);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "ENOENT") this.options.onError?.(error);
      }
    }
  }

  /**
   * Takes over the segments of processes that are gone, hands each record to
   * `count` (in one turn with the segments becoming this journal's own, so the
   * next seal covers them), and returns how many records it read. A torn last
   * line (the writer died mid-write, before the sync that would have let its
   * answer end) is skipped.
   */
  adoptAbandoned(count: (record: JournalRecord) => void): number {
    const isRunning = this.options.isRunning ?? processIsRunning;
    let records = 0;
    for (const name of readdirSync(this.directory)) {
      const match = segmentName.exec(name);
      if (!match || name.startsWith(this.#prefix)) continue;
      const pid = Number(match[1]);
      if (pid !== process.pid && isRunning(pid)) continue;
      this.#adopted += 1;
      const adopted = path.join(this.directory, `${this.#prefix}a${this.#adopted}.jsonl`);
      try {
        renameSync(path.join(this.directory, name), adopted);
      } catch (error) {
        // Another process adopted it first.
        if ((error as NodeJS.ErrnoException).code === "ENOENT") continue;
        throw error;
      }
      let found = 0;
      for (const line of readFileSync(adopted, "utf8").split("\n")) {
        const record = parseLine(line);
        if (record === undefined) continue;
        count(record);
        found += 1;
      }
      records += found;
      // An empty segment (its writer's last batch had reached the store) has nothing to wait for.
      if (found === 0) this.release([adopted]);
      else this.#sealed.push(adopted);
    }
    return records;
  }

  /**
   * Writes what is queued and closes the segment. A segment with records the
   * store has not had stays for the next start to adopt; an empty one goes.
   */
  async close(): Promise<void> {
    this.#queue.push({ fd: this.#fd, lines: [], waiting: [], close: true });
    this.#fd = -1;
    await new Promise<void>((resolve) => {
      this.#queue.push({ fd: -1, lines: [], waiting: [resolve] });
      if (!this.#writing) {
        this.#writing = true;
        this.#drain();
      }
    });
    if (!this.#appendedSinceSeal) this.release([this.#file]);
  }

  #nextFile(): string {
    this.#segment += 1;
    return path.join(this.directory, `${this.#prefix}${this.#segment}.jsonl`);
  }

  #drain(): void {
    const group = this.#queue[0];
    if (group === undefined) {
      this.#writing = false;
      return;
    }
    this.#inFlight = group;
    const next = (): void => {
      this.#inFlight = undefined;
      this.#queue.shift();
      for (const resolve of group.waiting) resolve();
      this.#drain();
    };
    if (group.close) {
      close(group.fd, (error) => {
        if (error) this.options.onError?.(error);
        next();
      });
      return;
    }
    if (group.lines.length === 0) {
      next();
      return;
    }
    const bytes = Buffer.from(group.lines.join(""));
    if (this.options.sync !== "disk") {
      // Written here, on the loop: a group's few hundred bytes into the page cache cost a system call of a
      // few microseconds, where handing them to libuv's thread pool cost a thread's wake-up and the loop's
      // own wake-up after it, per group. Without that hand-off the gateway's CPU per request at saturation
      // fell by about a fifth (50 to 41 µs, medians of alternating runs). A sync (disk) can take
      // milliseconds, so it stays off the loop.
      try {
        writeAllSync(group.fd, bytes);
      } catch (error) {
        this.options.onError?.(error);
      }
      next();
      return;
    }
    writeAll(group.fd, bytes, 0, (error) => {
      if (error) {
        this.options.onError?.(error);
        next();
        return;
      }
      fdatasync(group.fd, (syncError) => {
        if (syncError) this.options.onError?.(syncError);
        next();
      });
    });
  }
}

function writeAllSync(fd: number, bytes: Buffer): void {
  let offset = 0;
  while (offset < bytes.length) offset += writeSync(fd, bytes, offset, bytes.length - offset);
}

function writeAll(fd: number, bytes: Buffer, offset: number, done: (error: Error | null) => void): void {
  write(fd, bytes, offset, bytes.length - offset, null, (error, written) => {
    if (error) done(error);
    else if (offset + written < bytes.length) writeAll(fd, bytes, offset + written, done);
    else done(null);
  });
}

function parseLine(line: string): JournalRecord | undefined {
  if (line.length === 0) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (!Array.isArray(value) || value.length !== 6) return undefined;
  const [key, model, minute, errors, promptTokens, completionTokens] = value as unknown[];
  if (typeof key !== "string" || typeof model !== "string" || typeof minute !== "string") return undefined;
  if (![errors, promptTokens, completionTokens].every((count) => typeof count === "number" && Number.isInteger(count) && count >= 0)) return undefined;
  return { key, model, minute, errors: errors as number, promptTokens: promptTokens as number, completionTokens: completionTokens as number };
}

/**
 * Whether a segment's writer still runs. A process killed with -9 whose
 * parent died with it stays a zombie until init reaps it, and kill(pid, 0)
 * answers for a zombie as for a live process: its segments were then left
 * unadopted by the gateway started in its place, and their usage missing
 * until the next start. On Linux a zombie ("Z" in /proc/PID/stat) is gone.
 */
export function processIsRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    const stat = readStat(pid);
    // The state follows the command name's closing parenthesis, which the name itself may contain.
    return stat === undefined || stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch (error) {
    // EPERM: it runs, as another user.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

function readStat(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    // No /proc (macOS), or it went in between: kill(pid, 0) has answered.
    return undefined;
  }
}

/** Segment files left in a journal directory (for tests and messages). */
export function journalSegments(directory: string): string[] {
  try {
    return readdirSync(directory).filter((name) => segmentName.test(name));
  } catch {
    return [];
  }
}
