import { randomBytes } from "node:crypto";

interface KeptImage {
  readonly bytes: Buffer;
  readonly contentType: string;
  readonly expiresAt: number;
}

/**
 * Images answered as `url`, kept in this gateway's memory for a bounded time
 * and a bounded total size: OpenAI's own image URLs expire (after an hour),
 * and a gateway must not grow without limit because clients never fetch what
 * they asked for. Past the size budget the oldest go first. Ids are 128
 * random bits: the URL is the capability, as OpenAI's signed URLs are, so it
 * can be opened by a browser or an <img> tag that carries no key.
 */
export class KeptImages {
  readonly #images = new Map<string, KeptImage>();
  #bytes = 0;

  constructor(
    readonly keepMs: number,
    readonly maxBytes: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Keeps one image and returns its id (the last path segment of its URL, with its extension). */
  keep(bytes: Buffer, contentType: string): string {
    this.#sweep();
    const id = `${randomBytes(16).toString("hex")}${extensionOf(contentType)}`;
    this.#images.set(id, { bytes, contentType, expiresAt: this.now() + this.keepMs });
    this.#bytes += bytes.length;
    // Maps iterate in insertion order: the first entries are the oldest.
    for (const [oldest, image] of this.#images) {
      if (this.#bytes <= this.maxBytes || oldest === id) break;
      this.#images.delete(oldest);
      this.#bytes -= image.bytes.length;
    }
    return id;
  }

  /** The image, or undefined when it was never kept here or its time is up. */
  get(id: string): { bytes: Buffer; contentType: string } | undefined {
    const image = this.#images.get(id);
    if (!image) return undefined;
    if (image.expiresAt <= this.now()) {
      this.#images.delete(id);
      this.#bytes -= image.bytes.length;
      return undefined;
    }
    return image;
  }

  get size(): { images: number; bytes: number } {
    return { images: this.#images.size, bytes: this.#bytes };
  }

  #sweep(): void {
    const now = this.now();
    for (const [id, image] of this.#images) {
      // Kept for the same time each, so expiry follows insertion order.
      if (image.expiresAt > now) break;
      this.#images.delete(id);
      this.#bytes -= image.bytes.length;
    }
  }
}

function extensionOf(contentType: string): string {
  if (contentType === "image/png") return ".png";
  if (contentType === "image/jpeg") return ".jpg";
  if (contentType === "image/webp") return ".webp";
  if (contentType === "model/gltf-binary") return ".glb";
  return "";
}
