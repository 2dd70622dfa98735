export interface FetchProgress {
  readonly bytesDone: number;
  /** Undefined until every file's size is known. */
  readonly bytesTotal: number | undefined;
}

export interface FetchWeightsOptions {
  readonly source: string;
  /** DATA_DIR/weights */
  readonly cacheDirectory: string;
  /** Named in failure reasons, so an operator knows which machine could not fetch. */
  readonly nodeName: string;
  readonly hubUrl: string;
  readonly hubToken: string | undefined;
  readonly onProgress?: ((progress: FetchProgress) => void) | undefined;
  readonly signal?: AbortSignal | undefined;
  /** Attempts per file when the connection breaks; each resumes where the last stopped. */
  readonly maxAttempts?: number | undefined;
  /** First pause between attempts, doubled each time. */
  readonly retryDelayMs?: number | undefined;
}

export interface RemoteFile {
  readonly url: string;
  /** Relative to the source's cache folder; "" for a single-file source. */
  readonly relativePath: string;
  size: number | undefined;
  readonly sha256: string | undefined;
  /** Where the mirror may publish the file's sum (`<file>.sha256`); undefined when it cannot (the hub) or does not (a listing without one). */
  readonly checksumUrl: string | undefined;
  readonly headers: Record<string, string>;
}
