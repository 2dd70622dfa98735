/** Hands the browser a file to save, as a link to the bytes in memory: nothing is sent anywhere, and no token is in a URL. */
export function saveFile(name: string, content: Blob): void {
  const url = URL.createObjectURL(content);
  const link = document.createElement("a");
  link.href = url;
  link.download = name;
  document.body.append(link);
  link.click();
  link.remove();
  // Revoked after the click has been handed over: revoking at once can cancel the download in some browsers.
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** 2026-12-02T17:04:05.123Z → 2026-12-02T17-04-05Z: a time that reads in a file name on every system. */
export function fileTime(at: Date = new Date()): string {
  return `${at.toISOString().slice(0, 19).replace(/:/g, "-")}Z`;
}
