# tests/test_foundation.py: a task the scheduler drops (--debug-drop-comm) must get it ejected
# by the kernel's watchdog (3 s), and the exit reported.
. /mosaic/guest/lib.sh
start_mosaic --timeout-ms 3000 --debug-drop-comm mosaic-victim --stats 0 \
    --stats-file /tmp/s.json || exit 1
printf '#!/bin/sh\nwhile :; do sleep 0.2; done\n' >/tmp/mosaic-victim
chmod +x /tmp/mosaic-victim
/tmp/mosaic-victim &
wait_mosaic_exit 120
report_json stats /tmp/s.json
