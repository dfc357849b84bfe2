package org.bertzoo.demo;

import android.app.ActionBar;
import android.app.Activity;
import android.os.Bundle;
import android.view.MenuItem;
import android.widget.TextView;
import java.util.Locale;
import java.util.Map;
import org.bertzoo.demo.core.ModelMetadata;
import org.bertzoo.demo.core.TextClassifier;

/** The model's metadata: task, labels, quantization, file size, sequence lengths, and the rest. */
public final class AboutActivity extends Activity {
  private TextView text;
  private boolean destroyed;

  @Override
  protected void onCreate(Bundle savedInstanceState) {
    super.onCreate(savedInstanceState);
    setContentView(R.layout.activity_about);
    ActionBar bar = getActionBar();
    if (bar != null) {
      bar.setDisplayHomeAsUpEnabled(true);
    }
    text = (TextView) findViewById(R.id.about_text);
    text.setText(R.string.loading);
    ModelRepository.load(
        this,
        new ModelRepository.Callback<TextClassifier>() {
          @Override
          public void onResult(TextClassifier result, Throwable error) {
            if (!destroyed) {
              text.setText(error != null ? MainActivity.describe(AboutActivity.this, error) : describe(result));
            }
          }
        });
  }

  @Override
  public boolean onOptionsItemSelected(MenuItem item) {
    if (item.getItemId() == android.R.id.home) {
      finish();
      return true;
    }
    return super.onOptionsItemSelected(item);
  }

  @Override
  protected void onDestroy() {
    destroyed = true;
    super.onDestroy();
  }

  private static String describe(TextClassifier classifier) {
    ModelMetadata m = classifier.metadata();
    StringBuilder b = new StringBuilder();
    b.append(String.format(Locale.US, "task           %s%n", m.task));
    b.append(String.format(Locale.US, "labels         %s%n", m.labels));
    b.append(String.format(Locale.US, "quantization   %s%n", m.quantization));
    b.append(String.format(Locale.US, "model size     %.1f MB (memory-mapped)%n", ModelRepository.modelBytes() / 1e6));
    b.append("signatures    ");
    for (ModelMetadata.Signature s : m.signatures) {
      b.append(' ').append(s.key).append(" [1, ").append(s.sequenceLength).append(']');
    }
    b.append(String.format(Locale.US, "%nvocabulary     %d tokens, %s%n",
        classifier.tokenizer().vocabularySize(), m.lowercase ? "uncased" : "cased"));
    b.append("\nmetadata.json\n");
    for (Map.Entry<String, String> e : m.summary.entrySet()) {
      b.append("  ").append(e.getKey()).append(": ").append(e.getValue()).append('\n');
    }
    return b.toString();
  }
}
