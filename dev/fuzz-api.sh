#!/usr/bin/env bash
# Contract fuzzing of the whole API with Schemathesis (from PyPI), in one command:
#
#   dev/fuzz-api.sh            # or: MAX_EXAMPLES=50 MAX_TIME=900 dev/fuzz-api.sh
#
# Starts the engine (`npm start`: embedded PostgreSQL + Temporal dev server) in a
# temporary DATA_DIR on free ports, signs up an account, and runs
# `schemathesis run <engine>/openapi.json` with the checks `not_a_server_error`
# (no 5xx), `status_code_conformance` (no status the document does not list) and
# `response_schema_conformance` (every answer matches its documented schema) as
# that account's owner, in live mode and then in the sandbox (MODES="live sandbox"),
# each bounded by MAX_TIME seconds; then stops everything and
# removes the data. Exit status: Schemathesis's (0 = no failure). Needs
# `pip install schemathesis` (4.x). The report lands in $REPORT_DIR
# (default test-results/schemathesis).
#
# /v1/auth/session and /v1/auth/browser_session (logout) and /v1/account (DELETE
# closes it) are left out: they would end the fuzzer's own session halfway and leave
# the rest of the run at 401.
set -euo pipefail
cd "$(dirname "$0")/.."

MAX_EXAMPLES="${MAX_EXAMPLES:-20}"
MAX_TIME="${MAX_TIME:-600}"
REPORT_DIR="${REPORT_DIR:-test-results/schemathesis}"
command -v schemathesis >/dev/null || { echo "schemathesis is not installed: pip install schemathesis" >&2; exit 2; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
PORT="$(free_port)"; PG_PORT="$(free_port)"; T_PORT="$(free_port)"; T_UI_PORT="$(free_port)"
DATA_DIR="$(mktemp -d -t billing-fuzz-XXXXXX)"
# Readable by the user embedded PostgreSQL runs as when this script runs as root.
chmod 755 "$DATA_DIR"
BASE="http://127.0.0.1:${PORT}"
LOG="${DATA_DIR}/engine.log"

ENGINE_PID=""
cleanup() {
  if [[ -n "$ENGINE_PID" ]]; then
    # The engine's whole session (setsid below): npm, node and embedded PostgreSQL; node stops them in order.
    kill -TERM -- "-$ENGINE_PID" 2>/dev/null || true
    for _ in $(seq 1 60); do pgrep -s "$ENGINE_PID" >/dev/null || break; sleep 1; done
    kill -KILL -- "-$ENGINE_PID" 2>/dev/null || true
  fi
  # The Temporal dev server runs detached (its own group); its pid file says which process it is.
  local pid_file="${DATA_DIR}/temporal/temporal.pid"
  if [[ -f "$pid_file" ]]; then
    local pid; pid="$(cat "$pid_file")"
    if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 1 15); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  rm -rf "$DATA_DIR"
}
trap cleanup EXIT INT TERM

echo "Starting the engine on ${BASE} (data: ${DATA_DIR})..."
# setsid: the engine and its child servers form their own group, stopped by the trap above.
PORT="$PORT" PUBLIC_URL="$BASE" DATA_DIR="$DATA_DIR" EMBEDDED_PG_PORT="$PG_PORT" TEMPORAL_PORT="$T_PORT" TEMPORAL_UI_PORT="$T_UI_PORT" \
  LOG_LEVEL="${LOG_LEVEL:-warn}" setsid npm start --silent >"$LOG" 2>&1 &
ENGINE_PID=$!
for _ in $(seq 1 180); do
  curl -fsS "${BASE}/health" >/dev/null 2>&1 && break
  kill -0 "$ENGINE_PID" 2>/dev/null || { echo "The engine stopped:" >&2; tail -40 "$LOG" >&2; exit 1; }
  sleep 1
done
curl -fsS "${BASE}/health" >/dev/null || { echo "The engine did not become healthy:" >&2; tail -40 "$LOG" >&2; exit 1; }

EMAIL="fuzz-$(date +%s)@example.com"
PASSWORD="Fuzz-password-$(date +%s)-x"
curl -fsS -X POST "${BASE}/v1/accounts" -H 'content-type: application/json' \
  -d "{\"email\":\"${EMAIL}\",\"name\":\"Fuzz Ltd\",\"type\":\"business\",\"password\":\"${PASSWORD}\"}" >/dev/null

mkdir -p "$REPORT_DIR"
# Both modes, one after the other: live as the owner, then the sandbox (x-sandbox-mode), each with its own report.
STATUS=0
for MODE in ${MODES:-live sandbox}; do
  # A fresh session per mode: a run may end its own session (revoking a user's sessions), and a token lives 15 minutes.
  TOKEN="$(curl -fsS -X POST "${BASE}/v1/auth/login" -H 'content-type: application/json' \
    -d "{\"email\":\"${EMAIL}\",\"password\":\"${PASSWORD}\"}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')"
  MODE_HEADER=()
  [[ "$MODE" == sandbox ]] && MODE_HEADER=(--header "x-sandbox-mode: true")
  echo "Running Schemathesis in ${MODE} mode (max ${MAX_EXAMPLES} examples per operation, at most ${MAX_TIME} s)..."
  set +e
  # An access token lives 15 minutes by default: a run longer than that ends at 401s (documented, but less coverage).
  timeout --signal=INT "$((MAX_TIME + 60))" schemathesis run "${BASE}/openapi.json" \
    --checks not_a_server_error,status_code_conformance,response_schema_conformance \
    --header "Authorization: Bearer ${TOKEN}" "${MODE_HEADER[@]}" \
    --max-examples "$MAX_EXAMPLES" \
    --max-time "$MAX_TIME" \
    --workers "${WORKERS:-2}" \
    --exclude-path-regex '^/v1/(auth/session|auth/browser_session|account)$' \
    --report junit --report-dir "${REPORT_DIR}/${MODE}" \
    ${SCHEMATHESIS_ARGS:-}
  MODE_STATUS=$?
  set -e
  echo "Schemathesis ${MODE} mode: exit ${MODE_STATUS}"
  [[ "$MODE_STATUS" -ne 0 ]] && STATUS="$MODE_STATUS"
done
if grep -q '"level":\(50\|60\)' "$LOG" 2>/dev/null; then
  echo "Engine errors logged during the run (level error/fatal):"
  grep '"level":\(50\|60\)' "$LOG" | head -20
fi
exit "$STATUS"
