# bench/chart.gp: the peak-shaving chart of one flash sale, from seckill-bench's timeline.csv.
#
#   gnuplot -e "datafile='out/X/timeline.csv'; outfile='out/X/chart.png'; subtitle='...'" bench/chart.gp
#
# Top panel: what the front was offered and answered (requests/s sent, 202/s, 409/s) and
# what PostgreSQL wrote (rows/s), on one time axis: the burst at the front, the steady
# drain behind it; on the right axis, orders accepted so far against orders in
# PostgreSQL: the gap between the two is the backlog waiting in Kafka.
# Bottom panel: latency percentiles of the answers in each 100 ms.
# timeline.csv columns: 1 t_s, 2 sent, 3 ok_202, 4 r_409, 5 r_429, 6 r_503, 7 other,
# 8 db_rows, 9 db_rows_per_s, 10 p50_ms, 11 p90_ms, 12 p99_ms, 13 p999_ms, 14 max_ms
# (counts are per 100 ms bucket: x10 gives per second).
if (!exists("datafile")) datafile = 'timeline.csv'
if (!exists("outfile")) outfile = 'chart.png'
if (!exists("subtitle")) subtitle = ''

set terminal pngcairo size 1200,700 enhanced font 'DejaVu Sans,10'
set output outfile
set datafile separator ','
set datafile missing ''
set key autotitle columnhead
set grid xtics ytics lc rgb '#dddddd'
set key top right opaque box lc rgb '#cccccc'

set multiplot layout 2,1 title "seckill: a flash sale, peak shaving from the front to PostgreSQL".(subtitle ne '' ? "\n{/*0.85 ".subtitle."}" : '') font ',13'

set lmargin 12
set rmargin 12
# Rows the event had before the run (0 for a new event): the right axis counts this run's.
stats datafile using ($8 >= 0 ? $8 : 1/0) nooutput
base = STATS_records > 0 ? STATS_min : 0
stats datafile using 3 nooutput
accepted = STATS_sum
set xlabel 'time since the first request (s)'
set ylabel 'per second'
set format y '%.0s%c'
set yrange [0:*]
set y2label 'orders (cumulative)'
set y2tics
set y2range [0:(accepted > 0 ? accepted * 1.9 : 1)]
set offsets 0, 0, graph 0.75, 0   # headroom above the curves for the key
set format y2 '%.0s%c'
plot datafile using 1:($2*10) with lines lw 1.5 lc rgb '#9e9e9e' title 'requests/s offered (sent)', \
     ''       using 1:($3*10) with lines lw 2.5 lc rgb '#2e7d32' title '202/s accepted (queued to Kafka)', \
     ''       using 1:($4*10) with lines lw 1.5 lc rgb '#ef6c00' title '409/s refused (sold out, duplicate)', \
     ''       using 1:(($5+$6+$7)*10) with lines lw 1.5 lc rgb '#c62828' title '429/503/other per s', \
     ''       using 1:($8 >= 0 ? $9 : 1/0) with steps lw 2.5 lc rgb '#1565c0' title 'rows/s written to PostgreSQL (seckill\_order)', \
     ''       using 1:3 smooth cumulative axes x1y2 with lines lw 1.5 dt 2 lc rgb '#2e7d32' title 'orders accepted so far (right)', \
     ''       using 1:($8 >= 0 ? $8 - base : 1/0) axes x1y2 with lines lw 1.5 dt 2 lc rgb '#1565c0' title 'orders in PostgreSQL (right)'
unset y2label
unset y2tics
set offsets 0, 0, 0, 0

set ylabel 'latency (ms)'
set format y '%g'
set logscale y
set yrange [*:*]
plot datafile using 1:10 with lines lw 2 lc rgb '#2e7d32' title 'p50', \
     ''       using 1:11 with lines lw 1.5 lc rgb '#f9a825' title 'p90', \
     ''       using 1:12 with lines lw 1.5 lc rgb '#ef6c00' title 'p99', \
     ''       using 1:13 with lines lw 1 lc rgb '#c62828' title 'p99.9', \
     ''       using 1:14 with points pt 7 ps 0.3 lc rgb '#6a1b9a' title 'max'
unset multiplot
