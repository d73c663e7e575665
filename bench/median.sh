# Sourced by the bench scripts: median_of X... prints the median of its numeric arguments.
median_of() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
