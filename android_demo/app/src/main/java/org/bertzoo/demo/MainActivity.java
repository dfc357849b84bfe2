package org.bertzoo.demo;

import android.app.Activity;
import android.content.Context;
import android.content.Intent;
import android.os.Bundle;
import android.view.View;
import android.widget.Button;
import android.widget.EditText;
import android.widget.LinearLayout;
import android.widget.ProgressBar;
import android.widget.TextView;
import java.util.Locale;
import org.bertzoo.demo.core.Prediction;
import org.bertzoo.demo.core.TextClassifier;

/** Type or paste text, tap Classify, see the label, every class's probability and the timing. */
public final class MainActivity extends Activity {
  private EditText input;
  private Button classify;
  private TextView status;
  private TextView label;
  private LinearLayout probabilities;
  private TextView details;
  private boolean destroyed;

  @Override
  protected void onCreate(Bundle savedInstanceState) {
    super.onCreate(savedInstanceState);
    setContentView(R.layout.activity_main);
    input = (EditText) findViewById(R.id.input);
    classify = (Button) findViewById(R.id.classify);
    status = (TextView) findViewById(R.id.status);
    label = (TextView) findViewById(R.id.label);
    probabilities = (LinearLayout) findViewById(R.id.probabilities);
    details = (TextView) findViewById(R.id.details);

    classify.setOnClickListener(
        new View.OnClickListener() {
          @Override
          public void onClick(View v) {
            runClassifier();
          }
        });
    findViewById(R.id.sample)
        .setOnClickListener(
            new View.OnClickListener() {
              @Override
              public void onClick(View v) {
                input.setText(R.string.sample_text);
              }
            });
    findViewById(R.id.about)
        .setOnClickListener(
            new View.OnClickListener() {
              @Override
              public void onClick(View v) {
                startActivity(new Intent(MainActivity.this, AboutActivity.class));
              }
            });

    status.setText(R.string.loading);
    ModelRepository.load(
        this,
        new ModelRepository.Callback<TextClassifier>() {
          @Override
          public void onResult(TextClassifier result, Throwable error) {
            if (destroyed) {
              return;
            }
            if (error != null) {
              status.setText(describe(MainActivity.this, error));
              return;
            }
            classify.setEnabled(true);
            status.setText(R.string.ready);
          }
        });
  }

  @Override
  protected void onDestroy() {
    destroyed = true; // results arriving later are dropped; the model stays loaded for next time
    super.onDestroy();
  }

  private void runClassifier() {
    String text = input.getText().toString();
    if (text.trim().length() == 0) {
      status.setText(R.string.empty_input);
      return;
    }
    classify.setEnabled(false);
    status.setText(R.string.running);
    ModelRepository.classify(
        text,
        new ModelRepository.Callback<Prediction>() {
          @Override
          public void onResult(Prediction result, Throwable error) {
            if (destroyed) {
              return;
            }
            classify.setEnabled(true);
            if (error != null) {
              status.setText(describe(MainActivity.this, error));
              return;
            }
            show(result);
          }
        });
  }

  private void show(Prediction p) {
    status.setText("");
    label.setText(p.label);
    probabilities.removeAllViews();
    for (int i : p.ranking()) {
      TextView name = new TextView(this);
      name.setText(String.format(Locale.US, "%-14s %5.1f%%", p.labels.get(i), 100.0 * p.probabilities[i]));
      name.setTypeface(android.graphics.Typeface.MONOSPACE);
      ProgressBar bar = new ProgressBar(this, null, android.R.attr.progressBarStyleHorizontal);
      bar.setMax(1000);
      bar.setProgress(Math.round(1000 * p.probabilities[i]));
      probabilities.addView(name);
      probabilities.addView(bar);
    }
    details.setText(
        String.format(
            Locale.US,
            "signature  %s%ntokens     %d of %d%s%ninference  %.1f ms%ntotal      %.1f ms (with tokenization)",
            p.signatureKey,
            p.numTokens,
            p.sequenceLength,
            p.truncated ? " (text truncated)" : "",
            p.inferenceMillis,
            p.totalMillis));
  }

  /** A message for the screen; a missing LiteRT runtime gets its own explanation. */
  static String describe(Context context, Throwable error) {
    if (error instanceof NoClassDefFoundError || error instanceof UnsatisfiedLinkError) {
      // The command-line APK (scripts/build_apk.sh) is built against stubs of LiteRT.
      return context.getString(R.string.no_runtime) + "\n\n(" + error + ")";
    }
    String message = error.getMessage();
    return "Error: " + (message != null ? message : error.toString());
  }
}
