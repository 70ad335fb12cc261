# plot.gp — renders the benchmark CSV (tessera_bench --csv) as an SVG
# horizontal bar chart: one bar per workload, the ratio of Tessera's median
# to the plain-array baseline's median, on a log scale with parity (1x)
# marked. Bars start at 1x, so a bar to the left means Tessera was faster.
#
#   gnuplot -e "csv='build/bench/bench_results.csv'; out='build/bench/bench_results.svg'" \
#           bench/plot.gp
#
# Optional: label='text' is appended to the title (make bench passes the date).
# The CSV's first column is the quoted workload name, the last the ratio;
# rows of failed workloads have empty numbers and are marked "failed".

if (!exists("csv")) csv = 'build/bench/bench_results.csv'
if (!exists("out")) out = 'build/bench/bench_results.svg'
if (!exists("label")) label = ''

set datafile separator comma
set datafile missing ''

# Count the data rows (the header is skipped) to size the picture. With no
# timing row (e.g. --filter memory) there is nothing to draw.
stats csv using 8 skip 1 nooutput
if (!exists("STATS_records") || STATS_records < 1) {
    print "plot.gp: no timing rows in ".csv.", no chart drawn"
    exit
}
maxr = STATS_max > 1 ? STATS_max : 1
minr = STATS_min < 1 ? STATS_min : 1
# Every row, failed ones (empty numbers) included, gets a line of its own.
stats csv using 0 skip 1 nooutput
rows = STATS_records

set terminal svg size 1000, (130 + 24 * rows) dynamic noenhanced font "sans,12" background rgb "white"
set output out

title = "Tessera vs. plain C arrays: median time ratio per workload"
if (strlen(label) > 0) title = title . " (" . label . ")"
set title title
set xlabel "ratio = Tessera median / plain-array median, log scale (< 1x: Tessera faster)\ngreen: up to 2x, amber: up to 10x, red: more than 10x"
set logscale x 10
set xrange [minr / 2.0 : maxr * 3.0] noextend
set yrange [rows : -1]
set format x "%gx"
set ytics nomirror scale 0 font "sans,11"
set xtics nomirror
set grid xtics lc rgb "#dddddd"
set border 3
set key off
set lmargin 40
set arrow from 1, graph 0 to 1, graph 1 nohead lc rgb "#555555" dt 2

# Colours: close to the baseline, a few times slower, an order of magnitude.
colour(r) = r <= 2 ? 0x4c9a2a : r <= 10 ? 0xe0a030 : 0xc0392b
lo(r) = r < 1 ? r : 1
hi(r) = r < 1 ? 1 : r

# One bar per data row, at y = the row's position in the file ($0).
plot csv skip 1 using 8:0:(lo($8)):(hi($8)):($0 - 0.35):($0 + 0.35):(colour($8)):ytic(1) \
         with boxxyerror fs solid 0.85 noborder lc rgb variable, \
     '' skip 1 using (hi($8) * 1.08):0:(sprintf("%.2fx", $8)) \
         with labels left font "sans,10" textcolor rgb "#333333", \
     '' skip 1 using (1.08):0:(valid(8) ? "" : "failed (see the table)") \
         with labels left font "sans,10" textcolor rgb "#c0392b"
