// Versions in one place: AGP 8.7 supports compileSdk 35 and needs Gradle >= 8.9 and JDK 17.
plugins {
    id("com.android.application") version "8.7.3" apply false
}
