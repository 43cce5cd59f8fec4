#!/bin/sh
# Keeps README.md's knob tables in step with the code: every SIMGPU_* variable of the X-macro in
# core/config.h and every SIM_TRAIN_* variable of sim_train must be documented.
#   check_readme.sh SIMGPU_DIR SIM_TRAIN_DIR
set -eu
readme="$1/README.md"
status=0
for knob in $(grep -oh '"SIMGPU_[A-Z_]*"' "$1/core/config.h" | tr -d '"' | sort -u) \
            $(grep -ohr 'SIM_TRAIN_[A-Z][A-Z_]*' "$2/simtorch" | sort -u); do
  if ! grep -q "\`$knob\`" "$readme"; then
    echo "FAIL: $knob is not documented in $readme"
    status=1
  fi
done
[ $status -eq 0 ] && echo "ok: every knob is documented"
exit $status
