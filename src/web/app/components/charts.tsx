// Charts through Chart.js (react-chartjs-2); only the pieces used are registered (smaller bundle).
import { BarElement, CategoryScale, Chart, Filler, Legend, LinearScale, LineElement, PointElement, Tooltip } from "chart.js";
import { Bar, Line } from "react-chartjs-2";

Chart.register(BarElement, CategoryScale, LinearScale, LineElement, PointElement, Tooltip, Legend, Filler);

const COLORS = ["#2456d6", "#067647", "#b54708", "#7a5af8", "#b42318", "#0e9384"];

export function BarChart({ labels, values, label }: { labels: string[]; values: number[]; label: string }) {
  return (
    <div className="chart">
      <Bar
        aria-label={label}
        role="img"
        data={{ labels, datasets: [{ label, data: values, backgroundColor: labels.map((_, i) => COLORS[i % COLORS.length]!) }] }}
        options={{ maintainAspectRatio: false, animation: false, plugins: { legend: { display: false } }, scales: { y: { beginAtZero: true, ticks: { precision: 0 } } } }}
      />
    </div>
  );
}

export function LineChart({ labels, series, label }: { labels: string[]; series: { name: string; values: number[] }[]; label: string }) {
  return (
    <div className="chart">
      <Line
        aria-label={label}
        role="img"
        data={{ labels, datasets: series.map((s, i) => ({ label: s.name, data: s.values, borderColor: COLORS[i % COLORS.length], backgroundColor: COLORS[i % COLORS.length], tension: 0.25, pointRadius: 2 })) }}
        options={{ maintainAspectRatio: false, animation: false, scales: { y: { beginAtZero: true, ticks: { precision: 0 } } } }}
      />
    </div>
  );
}
