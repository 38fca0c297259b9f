# Switchyard: `make start` runs the service (embedded Postgres unless DATABASE_URL is set);
# `make test` runs every test suite. Both install and build first on a fresh clone.
NODE ?= node
TEST_ARGS ?=

.PHONY: all install build browser promtool wrk haproxy start test test-cluster bench bench-eval bench-handler bench-regex bench-apply bench-capture bench-propagation bench-experiments bench-blast-radius bench-scale clean

all: build

# `npm ci` rejects this lockfile because the registry here lacks some other platforms'
# optional packages (msgpackr-extract darwin/win32); `npm install` honours the lockfile.
# --prefer-offline takes packages already in npm's cache without asking the registry again (the
# lockfile pins versions and integrity either way).
node_modules/.installed: package.json package-lock.json
	npm install --no-audit --no-fund --prefer-offline
	@touch $@

install: node_modules/.installed

# The server compiles incrementally (tsconfig.json: dist/tsconfig.tsbuildinfo), so an unchanged
# tree costs about a second; the console is type-checked and bundled only when its sources change.
TSC = node_modules/.bin/tsc
CONSOLE_SRC := $(shell find console/src -type f) console/index.html console/build.mjs console/tsconfig.json

build: node_modules/.installed dist/console/app.js
	$(TSC) -p tsconfig.json

dist/console/app.js: node_modules/.installed $(CONSOLE_SRC)
	$(TSC) -p console/tsconfig.json
	$(NODE) console/build.mjs

start: build
	$(NODE) dist/src/cli.js start

# Installs Debian's package $(1) when $(2) is missing (apt-get, with sudo unless root); $(3) says
# what happens without it. Nothing is ever downloaded from elsewhere.
define apt_install
	@test -x $(2) || { echo "installing Debian's $(1)"; \
	  SUDO=$$(test "$$(id -u)" = 0 || echo sudo); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $(1) \
	  || echo "could not install $(1): $(3)"; }
endef

# The browser tests (posthog-js, the console) drive Debian's Chromium (never a downloaded browser).
CHROMIUM ?= /usr/bin/chromium
browser:
	$(call apt_install,chromium,$(CHROMIUM),every suite still runs and the browser tests fail saying so)

# test/deploy checks the alert rules with promtool from Debian's prometheus package, and renders
# deploy/kubernetes with kubectl's kustomize v5 (KUBECTL, default /usr/bin/kubectl; Debian
# bookworm's kubernetes-client is 1.20, too old to render the overlays, so it is not installed here).
PROMTOOL ?= /usr/bin/promtool
promtool:
	$(call apt_install,prometheus,$(PROMTOOL),every suite still runs and the deploy tests fail saying so)

test: build browser promtool
	CHROMIUM_PATH=$(CHROMIUM) PROMTOOL=$(PROMTOOL) $(NODE) dist/test/run.js $(TEST_ARGS)

# `make test-cluster` (root: network namespaces) runs the topology on namespace hosts behind Debian's
# HAProxy and breaks it on purpose (test/cluster/); needs Debian's postgresql 15 and iproute2.
HAPROXY ?= /usr/sbin/haproxy
PG15 ?= /usr/lib/postgresql/15/bin/pg_ctl
haproxy:
	$(call apt_install,haproxy,$(HAPROXY),the cluster test fails saying so)
	$(call apt_install,postgresql-15,$(PG15),the cluster test fails saying so)
	$(call apt_install,iproute2,/usr/sbin/ip,the cluster test fails saying so)

test-cluster: build haproxy
	$(NODE) dist/test/cluster/run.js

bench-eval: build
	$(NODE) dist/bench/evaluation.js

bench-handler: build
	$(NODE) dist/bench/flags-handler.js

bench-regex: build
	$(NODE) dist/bench/regex.js

bench-apply: build
	$(NODE) dist/bench/apply.js

# `make bench` drives the IO-thread runs with Debian's wrk (a C load generator: less of the shared
# cores than autocannon); without it they fall back to autocannon.
WRK ?= /usr/bin/wrk
wrk:
	$(call apt_install,wrk,$(WRK),the IO-thread runs use autocannon)

bench: build wrk
	WRK_PATH=$(WRK) $(NODE) dist/bench/flags.js

bench-propagation: build
	$(NODE) dist/bench/propagation.js

bench-experiments: build
	$(NODE) dist/bench/experiments.js

bench-scale: build
	BENCH_PERSONS=$(or $(N),1000000) $(NODE) dist/bench/scale.js

bench-blast-radius: build
	$(NODE) dist/bench/blast-radius.js

bench-capture: build
	$(NODE) dist/bench/capture.js
	$(NODE) dist/bench/capture-drain.js

clean:
	rm -rf dist
