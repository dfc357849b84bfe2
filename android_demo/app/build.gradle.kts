plugins {
    id("com.android.application")
}

android {
    namespace = "org.bertzoo.demo"
    compileSdk = 35

    defaultConfig {
        applicationId = "org.bertzoo.demo"
        minSdk = 24 // LiteRT 2.3's AARs declare minSdk 24
        targetSdk = 35
        versionCode = 1
        versionName = "0.1.0"
    }

    buildTypes {
        release {
            isMinifyEnabled = false
        }
    }

    compileOptions {
        sourceCompatibility = JavaVersion.VERSION_11
        targetCompatibility = JavaVersion.VERSION_11
    }

    // Store the model uncompressed in the APK: the app memory-maps it through
    // AssetManager.openFd, which fails on a compressed asset.
    androidResources {
        noCompress += "tflite"
    }

    testOptions {
        unitTests.all {
            it.useJUnitPlatform()
            // ./gradlew test -Pbertzoo.vectors=<abs path>/android_demo/build/vectors runs the
            // Python-vector tests too (make_vectors.py writes them); without it they are skipped.
            (project.findProperty("bertzoo.vectors") as String?)?.let { dir ->
                it.systemProperty("bertzoo.vectors", dir)
            }
        }
    }
}

dependencies {
    // The LiteRT runtime (successor of TensorFlow Lite); 2.3 matches the ai-edge-litert wheel
    // the JVM end-to-end check runs. The app uses its Interpreter API (CPU).
    implementation("com.google.ai.edge.litert:litert:2.3.0")

    testImplementation("org.junit.jupiter:junit-jupiter:5.9.2")
    testRuntimeOnly("org.junit.platform:junit-platform-launcher:1.9.2")
    // android.jar's org.json is a stub on the JVM; unit tests need a real implementation.
    testImplementation("org.json:json:20240303")
}
