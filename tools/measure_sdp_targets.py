"""Targets of issue 9 for the SDP solver. Usage: python tools/measure_sdp_targets.py CASE
CASE in credit, credit_scs, planted200, planted784, optdigits, letter, small. Needs SKQUAD_DATA for
the UCI cases. Prints time, certified gap, peak RSS. ``small`` times default fits against
solver="SCS" (same refit) on standardized iris, wine and breast cancer, interleaved in one
process after a warm-up, and prints the medians of 5 rounds and their ratio. ``optdigits``
(4496 training rows, the rest for test) and ``letter`` (20000 rows, 26 classes; 16000 train)
also print the process CPU time, which a loaded machine inflates less than the wall time;
``optdigits 1e-3`` passes ``tol=1e-3``."""
import resource, sys, time, warnings
import numpy as np
from sklearn.model_selection import train_test_split
from skquad import SDPQuantizedClassifier
from skquad.datasets import load_uci, make_planted_quantized, make_uci_preprocessor

case = sys.argv[1]
# Optional second argument: tol for the optdigits / letter cases (default: the estimator's).
tol_kwargs = {"tol": float(sys.argv[2])} if len(sys.argv) > 2 else {}
warnings.simplefilter("always")
def report(model, elapsed, extra=""):
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{case}: fit {elapsed:.1f}s solve {model.solve_time_:.1f}s status={model.solver_status_} "
          f"relaxed={model.relaxed_objective_:.8f} lower={model.lower_bound_:.8f} "
          f"relgap={model.certified_gap_ / model.relaxed_objective_:.2e} n_iter={model.n_iter_} "
          f"peak_rss={rss:.0f}MB {extra}", flush=True)

if case.startswith("credit"):
    X, y = load_uci("credit-approval", return_X_y=True, as_frame=True)
    X = make_uci_preprocessor().fit_transform(X)
    y = np.asarray(y).astype(str)
    solver = "SCS" if case == "credit_scs" else None
    t = time.perf_counter()
    model = SDPQuantizedClassifier(loss="logistic", solver=solver, random_state=0).fit(X, y)
    report(model, time.perf_counter() - t, f"n={X.shape[0]} d={X.shape[1]} train_acc={model.score(X, y):.3f}")
elif case.startswith("planted"):
    d = int(case[len("planted"):])
    X, y = make_planted_quantized(n_samples=2000, n_features=d, n_planted=10, random_state=0)
    t = time.perf_counter()
    model = SDPQuantizedClassifier(loss="logistic", n_neurons=1000, random_state=0).fit(X, y)
    report(model, time.perf_counter() - t, f"train_acc={model.score(X, y):.3f} relaxed_acc={np.mean(model.relaxed_predict(X) == y):.3f}")
elif case in ("optdigits", "letter"):
    X, y = load_uci(case, return_X_y=True, as_frame=True)
    if case == "letter":
        X = make_uci_preprocessor().fit_transform(X)
    X = np.asarray(X, dtype=np.float64); y = np.asarray(y).astype(str)
    size = 4496 if case == "optdigits" else 16000
    X_train, X_test, y_train, y_test = train_test_split(X, y, train_size=size, stratify=y, random_state=0)
    t, cpu = time.perf_counter(), time.process_time()
    model = SDPQuantizedClassifier(random_state=0, **tol_kwargs).fit(X_train, y_train)
    report(model, time.perf_counter() - t,
           f"cpu={time.process_time() - cpu:.1f}s "
           f"test_acc_sampled={model.score(X_test, y_test):.4f} test_acc_relaxed={np.mean(model.relaxed_predict(X_test) == y_test):.4f}")
elif case == "small":
    from sklearn.datasets import load_breast_cancer, load_iris, load_wine
    from sklearn.preprocessing import StandardScaler

    for loader in (load_iris, load_wine, load_breast_cancer):
        X, y = loader(return_X_y=True)
        X = StandardScaler().fit_transform(X)
        times = {None: [], "SCS": []}
        for round_ in range(6):  # round 0 warms up (imports, torch._dynamo)
            for solver in (None, "SCS"):
                t = time.perf_counter()
                model = SDPQuantizedClassifier(solver=solver, random_state=0).fit(X, y)
                if round_:
                    times[solver].append(time.perf_counter() - t)
                if round_ == 1:
                    print(f"  {loader.__name__} solver={solver}: solver_={model.solver_} "
                          f"relgap={model.certified_gap_ / model.relaxed_objective_:.1e} "
                          f"train_acc={model.score(X, y):.3f}", flush=True)
        native, scs = np.median(times[None]), np.median(times["SCS"])
        print(f"{loader.__name__}: default {native:.3f}s  SCS {scs:.3f}s  ratio SCS/default {scs / native:.1f}x", flush=True)
