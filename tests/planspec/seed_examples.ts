/**
 * The examples of seed 003 (PlanSpec), verbatim, extracted from its fenced code blocks.
 *
 * @module
 */

/** The format template of "PlanSpec Format Definition" (with its `# …` annotations). */
export const TEMPLATE_ANNOTATED =
  "# Plan: <title>                              # Optional, planning title\nGoal: <one-sentence goal>                    # Required\n> <additional explanation>                   # Goal continuation line (optional)\nConstraints:                                 # Optional, constraint list\n- <constraint 1>\n- <constraint 2>\n## Steps                                    # Required, step tree\n1. [x] [reason] Analyze input data quality issues → data_profile\n  > ← raw_data                              # Node body: input declaration (optional)\n  > Output missing rates per column, outlier proportions  # Node body: constraints/hints (optional)\n2. [x] [act] Clean data → cleaned | completed      # [x]=done, | followed by result\n3. [>] [subtask] Iterate training until reach the target threshold → model    # Typical structured thinking loop\n  3.1. [x] [act] Train model and cross-validate → cv_metrics | Gini=0.35\n  3.2. [x] [reason] Diagnose model weaknesses, suggest adjustments → adjustments\n  3.3. [>] [decide] Whether reach the target threshold                 # Container: children are branch conditions\n    3.3.1. [act]Reach the target threshold → output final model\n    3.3.2. [act] Not reach the target threshold → apply adjustments, continue next round\n4. [act] Generate report → report\n";

/** The template of "Document Structure". */
export const DOCUMENT_STRUCTURE =
  "# Plan: <title>\nGoal: <one-sentence goal>\n> <additional explanation>\nConstraints:\n- <constraint 1>\n- <constraint 2>\n## Steps\n1. [x] [type] description → outputs | actual result\n  > ← inputs (optional)\n  > detail line (node body)\n2. [>] [type] description → outputs\n  2.1. [type] description → outputs\n";

/** The node-body example of "Node Body". */
export const NODE_BODY =
  "1. [reason] Analyze data distribution and quality issues → data_profile, clean_suggestions\n  > ← synthetic_data\n  > Output data_profile includes missing rates per column, distribution types, outlier proportions\n  > clean_suggestions as action list, each with column, strategy, params\n";

/** The nesting example of "Tree Structure". */
export const TREE_STRUCTURE =
  "1. [subtask] Process all items → results\n  1.1. [act] Process item A → item_a_result\n    1.1.1. [reason] Verify item A → verification\n";

/** The example of "Inline Attributes". */
export const INLINE_ATTRIBUTES =
  "1. [x] [reason] Break output into claims → claims | Extracted 12 atomic claims\n2. [subtask] Process all items → results | Progress: 3/5\n3. [x] [reason] Check results → verdicts | All 10 checks passed | Progress: 10/10\n";

/** The complete file of "Folding Example". */
export const FOLDING_EXAMPLE =
  "1. [x] [act] Generate synthetic policy data → synthetic_data | Generated 10K rows\n  > Fields: policy_no, vehicle_age, driver_age\n  > claim_flag positive rate ~15%\n2. [>] [reason] Analyze data quality → data_profile, suggestions\n  > ← synthetic_data\n  > Analysis dimensions: missing rate, distribution type, outlier proportion\n3. [subtask] Clean data based on LLM profile → cleaned_data\n  > ← data_profile, suggestions\n  > Execute cleaning strategy per LLM recommendations\n";

/** "Loop Handling Strategy", option A. */
export const LOOP_OPTION_A =
  "1. [subtask] Process each item in batch → results\n  1.1. [x] [act] Process item A → item_a\n  1.2. [x] [act] Process item B → item_b\n  1.3. [act] Process item C → item_c\n";

/** "Loop Handling Strategy", option B. */
export const LOOP_OPTION_B = "1. [subtask] Process each item in batch → results | Progress: 3/5\n";

/** The "Complete Example". */
export const COMPLETE_EXAMPLE =
  "# Plan: Auto Insurance Claim Rate Prediction\nGoal: Build claim prediction model through XGBoost + LLM iterative optimization based on synthetic insurance data\nConstraints:\n- Synthetic data built-in generation, no external file dependency\n- polars for DataFrame processing, XGBoost for binary classification\n- Maximum 5 iterations, target Gini ≥ 0.40\n## Steps\n1. [x] [act] Generate 10K synthetic policy data with 5% missing values and outlier noise → synthetic_data | Generation complete\n  > Fields: policy_no, vehicle_age, driver_age, vehicle_value, annual_mileage,\n  >   region(5 categories), vehicle_type(3 categories), driver_gender, years_licensed,\n  >   previous_claims, premium, claim_flag, claim_amount\n  > claim_flag positive rate ~15%, claim_amount follows log-normal\n2. [>] [reason] Analyze data distribution and quality issues, provide cleaning strategy and feature engineering suggestions → data_profile, clean_suggestions, feature_suggestions\n  > ← synthetic_data\n  > Output data_profile includes: missing rates per column, distribution types, outlier proportions\n  > clean_suggestions as action list, feature_suggestions as transform list\n3. [subtask] Clean raw data based on LLM profile → cleaned_data\n  3.1. [reason] Determine specific cleaning rules (missing imputation strategy, outlier truncation thresholds, type corrections) → cleaning_plan\n    > ← data_profile, clean_suggestions\n  3.2. [act] Execute cleaning plan on synthetic_data, verify row count and null rate → cleaned_data\n4. [subtask] Construct prediction features based on cleaned data → feature_matrix\n  4.1. [reason] Propose feature transformation scheme (interaction terms, binning, encoding) → feature_plan\n    > ← cleaned_data, feature_suggestions\n  4.2. [act] Construct feature matrix per scheme, output polars DataFrame → feature_matrix\n5. [subtask] Iteratively train XGBoost until Gini ≥ 0.40 or 5 rounds completed → cv_metrics, feature_importance\n  5.1. [x] [act] Train XGBoost binary classifier, 5-fold stratified cross-validation → cv_metrics | Gini=0.38, AUC=0.69\n  5.2. [x] [act] Calculate Gini coefficient, AUC, A/E ratio, extract feature importance ranking → gini, auc, ae_ratio, feature_importance\n  5.3. [>] [reason] Diagnose model weaknesses from CV metrics and feature importance, suggest parameter and feature adjustment scheme → diagnosis, param_adjustments\n    > ← cv_metrics, feature_importance\n    > Analysis: overfitting (train/val gap), feature redundancy, class imbalance\n    > Suggestions: learning_rate/max_depth/reg_lambda adjustments + feature add/remove\n    > Output adjustments[], each with param, current, suggested, reason\n  5.4. [decide] Check if Gini reaches target threshold\n    5.4.1. [act] Gini ≥ target → exit iteration to report\n    5.4.2. [act] Not reach the target threshold → apply parameter adjustment scheme, continue next iteration\n6. [act] Generate actuarial analysis report covering model performance, feature insights, and business recommendations → report\n  > ← cv_metrics, feature_importance, data_profile, cleaning_plan, feature_plan\n  > Report structure: executive_summary + model_performance + feature_analysis\n  >   + iteration_history + recommendations\n  > Markdown format, with tables and key metrics highlighted\n7. [act] Assemble final output and exit → final_output\n";

/** The folded /showplan rendering of "Folding Example". */
export const FOLDING_EXAMPLE_RENDERED =
  "1  [x]  [ACT]      Generate synthetic policy data → synthetic_data | Generated 10K rows\n2  [>]  [REASON]   Analyze data quality → data_profile, suggestions\n                   > ← synthetic_data\n                   > Analysis dimensions: missing rate, distribution type, outlier proportion\n3  [ ]  [SUBTASK]  Clean data based on LLM profile → cleaned_data\n";

/** The engine-layer PLAN_CMD listing (with its explanation lines). */
export const ENGINE_COMMANDS =
  "PLAN_CMD: DONE <step_id> | <result summary>\n  — After step execution succeeds, engine automatically marks as done\n\nPLAN_CMD: BLOCKED <step_id> | <block reason>\n  — When step execution fails or prerequisite dependencies not met, engine automatically marks as blocked\n\nPLAN_CMD: SKIP <step_id> | <skip reason>\n  — When step is skipped (e.g., branch condition not met), engine automatically marks as skipped\n";

/** The LLM-layer PLAN_CMD listing (with its explanation lines). */
export const LLM_COMMANDS =
  "PLAN_CMD: ADD 2.3 [reason] Verify cleaned data has no nulls and row count ≥ original 95%\n> ← cleaned_data, raw_data\n> Check null rate < 0.1%, row retention rate >= 95%\n  — Insert new step at position 2.3, [type] specifies step type, followed by complete description.\n    When task info exceeds single line, immediately follow with > continuation lines as node body (detail),\n    providing constraints, input declarations, execution hints\n\nPLAN_CMD: REVISE 3.1 [reason] Analyze feature correlation matrix, identify redundant features → feature_analysis\n> ← feature_matrix\n> Output redundant feature list and suggested removal reasons\n  — Replace step's type, description, and node body (whole line replacement).\n    Immediately follow with > continuation lines to replace target step's detail; without > continuation lines, preserve original detail\n\nPLAN_CMD: REPLAN 4 | Model iteration strategy ineffective, need to re-decompose sub-steps\n  — Clear all child steps of container step 4, engine will regenerate. Only for subtask/decide containers\n\nPLAN_CMD: REPLAN ALL | Goal understanding deviation, need to re-plan from scratch\n  — Discard entire plan, engine completely regenerates. Must write ALL, bare REPLAN will be ignored\n";

/** The abbreviated /showplan output example. */
export const SHOWPLAN_OUTPUT =
  "═══ PlanSpec: Auto Insurance Claim Rate Prediction ═══\n\nGoal: Build claim prediction model through XGBoost + LLM iterative optimization based on synthetic insurance data\n\nConstraints:\n  - Synthetic data built-in generation\n  - polars + XGBoost\n\nProgress: 2/14 (14%)\n\n1  [x]  [ACT]      Generate 10K synthetic policy data → synthetic_data | Generation complete\n2  [>]  [REASON]   Analyze data distribution and quality issues → data_profile, clean_suggestions, feature_suggestions\n                   > ← synthetic_data\n                   > Output data_profile includes: missing rates per column, distribution types, outlier proportions\n3  [ ]  [SUBTASK]  Clean raw data based on LLM profile → cleaned_data\n├─ 3.1  [ ]  [REASON]   Determine specific cleaning rules → cleaning_plan\n└─ 3.2  [ ]  [ACT]      Execute cleaning plan on synthetic_data → cleaned_data\n...\n\n───\nSteps: 14 | reason: 4 | act: 6 | decide: 1 | subtask: 3\nProgress: 2/14 (14%)\n";
