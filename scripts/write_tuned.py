"""Write the best trial of an Optuna study into conf/tuned/<model>_<dataset>.yaml.

    llc-bench run -m model=llsvm dataset=banana +search=llsvm +dataset.validation=0.25
    python scripts/write_tuned.py --model llsvm --dataset banana [--force]

(see llc_bench/experiment/tuning.py)
"""

from llc_bench.experiment.tuning import main

if __name__ == "__main__":
    main()
