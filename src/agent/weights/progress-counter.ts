import type { FetchProgress, RemoteFile } from "./fetch-options.js";

export class ProgressCounter {
  private readonly done = new Map<string, number>();
  constructor(
    private readonly files: readonly RemoteFile[],
    private readonly report: ((progress: FetchProgress) => void) | undefined,
  ) {}
  set(relativePath: string, bytes: number): void {
    this.done.set(relativePath, bytes);
    this.emit();
  }
  emit(): void {
    if (!this.report) return;
    let bytesDone = 0;
    for (const bytes of this.done.values()) bytesDone += bytes;
    const sizes = this.files.map((file) => file.size);
    const bytesTotal = sizes.every((size) => size !== undefined) ? sizes.reduce<number>((sum, size) => sum + size, 0) : undefined;
    this.report({ bytesDone, bytesTotal: bytesTotal === undefined ? undefined : Math.max(bytesTotal, bytesDone) });
  }
}
