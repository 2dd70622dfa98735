const comma = Buffer.from(",");
const close = Buffer.from("]");
const end = Buffer.from("}");

/**
 * `{"<field>":[<item>,<item>,…]}` (and `"next_cursor"` when paged) from each
 * item's kept JSON bytes, copied once into one buffer: the list's answer
 * without serialising or encoding an item again.
 */
export function jsonListBody(field: string, items: readonly (Buffer | readonly Buffer[])[], nextCursor?: string | null): Buffer {
  return laidOutJsonList(field, items, nextCursor).body;
}

/**
 * jsonListBody, and where each item starts in it: for answers kept whole
 * that point into their items (keptListBody) or patch them in place
 * (PatchedListBody), so the layout is known in this one place.
 */
export function laidOutJsonList(field: string, items: readonly (Buffer | readonly Buffer[])[], nextCursor?: string | null): { body: Buffer; starts: number[] } {
  const parts: Buffer[] = [Buffer.from(`{${JSON.stringify(field)}:[`)];
  const starts: number[] = [];
  let at = (parts[0] as Buffer).length;
  items.forEach((item, index) => {
    if (index > 0) {
      parts.push(comma);
      at += comma.length;
    }
    starts.push(at);
    for (const part of Buffer.isBuffer(item) ? [item] : item) {
      parts.push(part);
      at += part.length;
    }
  });
  parts.push(close);
  if (nextCursor !== undefined) parts.push(Buffer.from(`,"next_cursor":${JSON.stringify(nextCursor)}`));
  parts.push(end);
  return { body: Buffer.concat(parts), starts };
}
