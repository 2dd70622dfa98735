const GiB = 1024 ** 3;

export function gib(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined) return "—";
  return `${(bytes / GiB).toFixed(bytes >= 100 * GiB ? 0 : 1)} GiB`;
}

export function ago(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return "—";
  const seconds = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (seconds < 60) return `${seconds} s ago`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min ago`;
  if (seconds < 86_400) return `${(seconds / 3600).toFixed(1)} h ago`;
  return `${Math.round(seconds / 86_400)} d ago`;
}

export function duration(sinceIso: string, now = Date.now()): string {
  const seconds = Math.max(0, Math.round((now - Date.parse(sinceIso)) / 1000));
  if (seconds < 60) return `${seconds} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
  return `${Math.floor(seconds / 3600)} h ${Math.floor((seconds % 3600) / 60)} min`;
}

export function time(iso: string): string {
  return new Date(iso).toLocaleString();
}
