# Mosaic: the two commands a user needs are `make run` and `make test`.
# Both install what they need first (scripts/install-deps, idempotent; packages listed with
# their reasons in scripts/deps.txt): `make run` the build toolchain and the VM harness,
# `make test` also what only the tests use. `make test-fast` is the tier without a VM.

BPF_CLANG ?= clang-19
export BPF_CLANG
TOPO ?= 1llc
ROUNDS ?= 5
BIN := target/release/scx_mosaic

.PHONY: all deps test-deps build run test test-fast unit-test host-test vm-test fmt lint \
	fresh-check

all: build

deps:
	@scripts/install-deps run

test-deps:
	@scripts/install-deps test

build: deps
	cargo build --release

# The scheduler under a demo workload, with live stats and a comparison against
# the kernel's default scheduler: on this host if it has sched_ext, else in the VM.
run: build
	@if [ -e /sys/kernel/sched_ext ] && [ "$$(id -u)" = 0 ]; then \
		PATH="$(CURDIR)/target/release:$$PATH" sh tests/guest/demo.sh $(ROUNDS); \
	else \
		echo "This kernel has no sched_ext: running in the bundled VM ($(TOPO))"; \
		vm/run --topo $(TOPO) --timeout 1800 -- "sh /mosaic/guest/demo.sh $(ROUNDS)"; \
	fi

# The Rust tests of the workspace: unit and property tests of scx_mosaic, mosaic-bench's,
# and the simulator's scenarios (mosaic-sim runs the BPF C on the host).
unit-test: build
	cargo test --release

# The pytest tests marked `host` (pytest.ini): install, the binary's command line, vm/run's
# accelerator choice; no VM boots.
host-test: build test-deps
	python3 -m pytest -v -m host tests/

# Every pytest test, the `vm` ones (each boots QEMU) and the `host` ones. One alone:
# python3 -m pytest -v tests/test_steal.py -k gate
# The 25 slowest tests close the log: where the suite's time goes.
vm-test: build test-deps
	python3 -m pytest -v --durations=25 tests/

# Everything but the VM: lint, unit, property and simulator tests, the host-only pytest tests.
test-fast: lint unit-test host-test

# The whole suite (CI's command: .ci/run).
test: lint unit-test vm-test

# The README's run command on pristine Debian 12 and 13 roots (debootstrap, cached under
# /var/cache/mosaic/fresh): proves install-deps installs all it needs. RELEASE=bookworm|trixie.
fresh-check:
	scripts/fresh-check $(if $(RELEASE),--release $(RELEASE))

fmt:
	cargo fmt
	clang-format-19 -i scheduler/src/bpf/*.c scheduler/src/bpf/*.h bench/src/bpf/*.c

# Formatting, clippy, and the BPF interface: each *.bpf.c compiles alone against
# mosaic.bpf.h (scripts/bpf-interface-check), so no cross-file use goes undeclared.
lint: build test-deps
	cargo fmt --check
	cargo clippy --release -- -D warnings
	clang-format-19 --dry-run -Werror scheduler/src/bpf/*.c scheduler/src/bpf/*.h bench/src/bpf/*.c
	scripts/bpf-interface-check
	@$(MAKE) --no-print-directory package-check

# The scheduler crate can be published: it packages, with its BPF sources and README
# (no verify build here: `make build` already built the same sources).
.PHONY: package-check
package-check:
	cargo package -p scx_mosaic --no-verify --allow-dirty --offline -q
	cargo package -p scx_mosaic --list --allow-dirty --offline | grep -qx src/bpf/main.bpf.c
	cargo package -p scx_mosaic --list --allow-dirty --offline | grep -qx README.md

# Every seed claim as an A/B in the simulator (mosaic-sim) -> docs/sim-report.md
.PHONY: sim-report
sim-report:
	cargo build --release -p mosaic-sim
	target/release/mosaic-sim report --out docs/sim-report.md

# The seed report's verdicts from two base RNG seeds must agree (two runs of
# the seed table: minutes on two cores, so not in cargo test's default set)
.PHONY: sim-verdicts
sim-verdicts:
	cargo test --release -p mosaic-sim --test report_verdicts -- --ignored --nocapture

# scx_mosaic's counters in the VM presets the simulator models -> docs/sim-vm-counters.json,
# which sim-report puts next to the simulator's (boots 4 VMs, 7 rounds per cell: 13-15 min on the
# 2-core TCG host). Each run adds a series; series of the same scheduler build are pooled.
.PHONY: sim-vm-counters
sim-vm-counters: build
	scripts/sim-vm-counters

# The benchmark suite (mosaic-bench) -> docs/benchmarks.md: the seeds' workloads, schedulers
# interleaved in one VM boot per scenario, vs EEVDF and sched_ext peers (built once into the
# cache). SCENARIO=name runs one scenario (merged into the report); FULL=1 runs the matrix
# (7 scenarios x 4 topologies), resuming: cells this binary already measured are kept;
# BOOTS=2 gives every cell a second boot, pooled. AT=commit measures scx_mosaic built at that
# commit (scripts/bench-binary), so that a matrix cut short resumes after later commits;
# DOC=path writes another page than docs/benchmarks.md (results, plots in bench/ beside it),
# without the README's summary: a matrix being re-measured until it is whole.
DOC ?= docs/benchmarks.md
.PHONY: bench
bench: build
	@scripts/install-deps bench
	if [ -n "$(AT)" ]; then bin=$$(scripts/bench-binary $(AT)) || exit 1; export MOSAIC_BIN=$$bin \
		MOSAIC_BUILD="built at $$(git rev-parse --short=7 $(AT)) (scripts/bench-binary)"; fi; \
	target/release/mosaic-bench run \
		--doc $(DOC) $(if $(filter docs/benchmarks.md,$(DOC)),--readme README.md) \
		$(if $(SCENARIO),--scenario $(SCENARIO)) \
		$(if $(FULL),--full) $(if $(BOOTS),--boots $(BOOTS))

# Survival under a 2 s watchdog (SCX_TIMEOUT_MS=2000): hackbench -g 4 -l 200 with scx_mosaic
# and scx_p2dq interleaved, 3 rounds on each multi-LLC preset (4-6 min under TCG); the
# report says how many runs of each ended without an ejection. Results in target/bench/watchdog.
.PHONY: watchdog
watchdog: build
	target/release/mosaic-bench run --scenario hackbench --topo 2llc-smt,4llc,16cpu \
		--sched mosaic,p2dq --rounds 3 --watchdog-ms 2000 --out target/bench/watchdog

# Install the release binary (`make build` first), the systemd unit and, unless one exists,
# the example config: `sudo make install; sudo systemctl enable --now scx_mosaic`.
# PREFIX (/usr/local), BINDIR, UNITDIR, SYSCONFDIR (/etc) and DESTDIR (staging) apply.
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
UNITDIR ?= $(PREFIX)/lib/systemd/system
SYSCONFDIR ?= /etc
CONFIG := $(DESTDIR)$(SYSCONFDIR)/scx_mosaic/config.toml
# scx_mosaic reads /etc/scx_mosaic/config.toml by itself when it exists; only another
# SYSCONFDIR puts --config in the unit's ExecStart
CONFIG_ARG := $(if $(filter /etc,$(SYSCONFDIR)),, --config $(SYSCONFDIR)/scx_mosaic/config.toml)

.PHONY: install uninstall
install:
	@test -x $(BIN) || { echo "$(BIN) is missing: run 'make build' first" >&2; exit 1; }
	install -D -m 755 $(BIN) "$(DESTDIR)$(BINDIR)/scx_mosaic"
	install -d "$(DESTDIR)$(UNITDIR)"
	sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|^ExecStart=.*|&$(CONFIG_ARG)|' \
		packaging/scx_mosaic.service >"$(DESTDIR)$(UNITDIR)/scx_mosaic.service"
	chmod 644 "$(DESTDIR)$(UNITDIR)/scx_mosaic.service"
	@if [ -e "$(CONFIG)" ]; then \
		echo "keeping $(CONFIG) (the example is packaging/config.toml)"; \
	else \
		echo install -D -m 644 packaging/config.toml "$(CONFIG)"; \
		install -D -m 644 packaging/config.toml "$(CONFIG)"; \
	fi
	@if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then systemctl daemon-reload; fi

# Removes what install put down; the config only if it is still the unchanged example.
uninstall:
	rm -f "$(DESTDIR)$(BINDIR)/scx_mosaic" "$(DESTDIR)$(UNITDIR)/scx_mosaic.service"
	@if cmp -s packaging/config.toml "$(CONFIG)"; then \
		echo rm -f "$(CONFIG)"; rm -f "$(CONFIG)"; \
		rmdir "$(DESTDIR)$(SYSCONFDIR)/scx_mosaic" 2>/dev/null || true; \
	elif [ -e "$(CONFIG)" ]; then \
		echo "keeping $(CONFIG): it was edited"; \
	fi
	@if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then systemctl daemon-reload; fi

# The reliability gauntlet -> docs/reliability.md: every stressor cell on every VM topology
# on the default kernel, a subset on two older trixie-backports kernels (fetched on first use);
# one boot per (kernel, topology). About 25 minutes on 2 cores (TCG).
.PHONY: gauntlet
gauntlet: build
	tests/gauntlet/run.py --json target/gauntlet/results.json
