import "uplot/dist/uPlot.min.css";
import { Text } from "@mantine/core";
import { useElementSize } from "@mantine/hooks";
import { useEffect, useRef } from "react";
import uPlot from "uplot";
import type { SeriesPoint } from "../types.ts";

type Field = Exclude<keyof SeriesPoint, "t">;

const palette = ["#1864ab", "#c92a2a", "#2b8a3e", "#862e9c"];

function seconds(t: string | number): number {
  return typeof t === "number" ? (t > 1e12 ? t / 1000 : t) : Date.parse(t) / 1000;
}

/**
 * A field's newest value, with its minute when the newest minute has none (no request in it): the title then
 * says what the chart's last point shows, rather than a dash beside a line that has data.
 */
export function latestText(points: readonly SeriesPoint[], field: Field): string {
  for (let index = points.length - 1; index >= 0; index -= 1) {
    const point = points[index] as SeriesPoint;
    const value = point[field];
    if (value === null) continue;
    const text = Number(value).toFixed(1);
    if (index === points.length - 1) return text;
    return `${text} at ${new Date(seconds(point.t) * 1000).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })}`;
  }
  return "—";
}

/** One chart of the last hour for some of a series' fields, drawn by uPlot (canvas, fast with thousands of points). */
export function SeriesChart({ title, points, fields, unit }: { title: string; points: readonly SeriesPoint[]; fields: readonly { field: Field; label: string }[]; unit: string }) {
  const holder = useRef<HTMLDivElement>(null);
  const { ref, width } = useElementSize();
  // With no value at all uPlot has no scale to draw a y-axis on: the chart says so in words instead.
  const empty = fields.every(({ field }) => points.every((point) => point[field] === null));
  useEffect(() => {
    if (!holder.current || width === 0 || empty) return undefined;
    const data: uPlot.AlignedData = [points.map((point) => seconds(point.t)), ...fields.map(({ field }) => points.map((point) => point[field]))];
    const chart = new uPlot(
      {
        width: Math.floor(width),
        height: 160,
        series: [{}, ...fields.map(({ label }, index) => ({ label, stroke: palette[index % palette.length], width: 1.5, spanGaps: false }))],
        // Room for each time label, so a phone's narrow chart shows fewer labels rather than labels run together.
        axes: [{ space: 70 }, { label: unit, size: 60 }],
        legend: { show: true },
      },
      data,
      holder.current,
    );
    return () => chart.destroy();
  }, [points, fields, width, unit, empty]);
  return (
    <div ref={ref} data-testid={`chart-${fields[0]?.field ?? "none"}`}>
      <Text fw={600} size="sm">
        {title}
        {points.length > 0 ? `: ${fields.map(({ field, label }) => `${label} ${latestText(points, field)}`).join(", ")}` : ""}
      </Text>
      {empty ? (
        <Text size="sm" h={160} pt="md">
          No data in the last hour: no request of this kind was answered.
        </Text>
      ) : (
        <div ref={holder} role="img" aria-label={`${title} over the last hour`} />
      )}
    </div>
  );
}
