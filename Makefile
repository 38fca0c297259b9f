# Switchyard: `make start` runs the service (embedded Postgres unless DATABASE_URL is set);
# `make test` runs every test suite. Both install and build first on a fresh clone.
NODE ?= node
TEST_ARGS ?=

.PHONY: all install build browser wrk start test bench bench-eval bench-regex bench-capture bench-propagation bench-experiments bench-blast-radius clean

all: build

# `npm ci` rejects this lockfile because the registry here lacks some other platforms'
# optional packages (msgpackr-extract darwin/win32); `npm install` honours the lockfile.
node_modules/.installed: package.json package-lock.json
	npm install --no-audit --no-fund
	@touch $@

install: node_modules/.installed

build: node_modules/.installed
	npx tsc -p tsconfig.json
	npx tsc -p console/tsconfig.json
	$(NODE) console/build.mjs

start: build
	$(NODE) dist/src/cli.js start

# The posthog-js browser test drives Debian's Chromium (never a downloaded browser).
CHROMIUM ?= /usr/bin/chromium
browser:
	@test -x $(CHROMIUM) || { echo "installing Debian's chromium for the browser test"; \
	  SUDO=$$(test "$$(id -u)" = 0 || echo sudo); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends chromium \
	  || echo "could not install chromium: every suite still runs, the posthog-js browser test will fail and say so"; }

test: build browser
	CHROMIUM_PATH=$(CHROMIUM) $(NODE) dist/test/run.js $(TEST_ARGS)

bench-eval: build
	$(NODE) dist/bench/evaluation.js

bench-regex: build
	$(NODE) dist/bench/regex.js

# `make bench` drives the IO-thread runs with Debian's wrk (a C load generator: less of the shared
# cores than autocannon); without it they fall back to autocannon.
WRK ?= /usr/bin/wrk
wrk:
	@test -x $(WRK) || { echo "installing Debian's wrk for the benchmark"; \
	  SUDO=$$(test "$$(id -u)" = 0 || echo sudo); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends wrk \
	  || echo "could not install wrk: the IO-thread runs use autocannon"; }

bench: build wrk
	WRK_PATH=$(WRK) $(NODE) dist/bench/flags.js

bench-propagation: build
	$(NODE) dist/bench/propagation.js

bench-experiments: build
	$(NODE) dist/bench/experiments.js

bench-blast-radius: build
	$(NODE) dist/bench/blast-radius.js

bench-capture: build
	$(NODE) dist/bench/capture.js
	$(NODE) dist/bench/capture-drain.js

clean:
	rm -rf dist
